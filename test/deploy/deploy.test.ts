import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

/**
 * What can be checked of the deployment files without a container engine or a cluster
 * (docs/operations.md "Deployment"): they parse, name only npm scripts that exist, wire probes,
 * Services and disruption budgets to real pods and ports, and every setting the apps read is
 * documented.
 */
const root = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => readFileSync(path.join(root, file), "utf8");
const rootPackage = JSON.parse(read("package.json")) as { scripts: Record<string, string>; workspaces: string[] };
const scripts = new Set(Object.keys(rootPackage.scripts));

type Doc = Record<string, any>;
const parseYaml = (file: string): Doc[] => {
  const docs = parseAllDocuments(read(file), { merge: true });
  for (const doc of docs) expect(doc.errors, `${file}: ${doc.errors.join("; ")}`).toEqual([]);
  return docs.map((doc) => doc.toJS({ maxAliasCount: 1000 }) as Doc).filter((d) => d !== null);
};

const k8sFiles = readdirSync(path.join(root, "deploy/k8s"))
  .filter((f) => f.endsWith(".yaml"))
  .map((f) => `deploy/k8s/${f}`);
const manifests = k8sFiles.filter((f) => !f.endsWith("kustomization.yaml")).flatMap(parseYaml);
const ofKind = (kind: string) => manifests.filter((m) => m.kind === kind);
const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/** `npm run --silent <args...>` is the image's entrypoint: the first argument must be a script. */
const expectScript = (args: unknown, where: string) => {
  expect(Array.isArray(args), `${where}: command is a list`).toBe(true);
  const [script] = args as string[];
  expect(scripts.has(script ?? ""), `${where}: npm script "${script}" exists`).toBe(true);
};

describe("Dockerfile", () => {
  it("is multi-stage, installs production dependencies from every workspace and runs node itself", () => {
    const dockerfile = read("Dockerfile");
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    for (const workspace of rootPackage.workspaces) {
      expect(dockerfile, workspace).toContain(`COPY ${workspace}/package.json ${workspace}/`);
    }
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    // No npm or shell between the supervisor and the app (docs/operations.md "Signals").
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node"\]$/m);
    const cmds = [...dockerfile.matchAll(/^CMD (\[.*\])$/gm)].map((m) => JSON.parse(m[1] ?? "[]") as string[]);
    expect(cmds.length).toBeGreaterThanOrEqual(5);
    for (const [entry] of cmds) expect(existsSync(path.join(root, entry ?? "")), entry).toBe(true);
    // A numeric user, so runAsNonRoot can verify it.
    expect(dockerfile).toMatch(/^USER \d+:\d+$/m);
  });
});

describe("deploy/compose.yaml", () => {
  const [compose] = parseYaml("deploy/compose.yaml");
  const services = (compose?.services ?? {}) as Record<string, Doc>;

  it("runs PostgreSQL, a migration, 2 APIs, 2 heartbeat daemons, 2 agents and a load balancer", () => {
    const byScript = (script: string) =>
      Object.keys(services).filter((name) => (services[name]?.command as string[] | undefined)?.[0] === script);
    expect(byScript("start:api")).toHaveLength(2);
    expect(byScript("start:heartbeat")).toHaveLength(2);
    expect(byScript("start:tunnel-agent")).toHaveLength(2);
    expect(services.migrate?.command).toEqual(["admin", "--", "migrate"]);
    expect(services.postgres?.image).toMatch(/^postgres:/);
    expect(services.lb?.ports).toEqual(expect.arrayContaining(["3000:3000", "3001:3001"]));
  });

  it("names only npm scripts that exist, and every app waits for the migration", () => {
    for (const [name, service] of Object.entries(services)) {
      if (service.image && !service.build) continue; // postgres, haproxy
      expectScript(service.command, `compose service ${name}`);
      if (name !== "migrate") {
        expect(service.depends_on?.migrate?.condition, name).toBe("service_completed_successfully");
        expect(service.healthcheck?.test?.join(" "), name).toMatch(/\/readyz/);
        expect(service.environment?.DATABASE_URL, name).toMatch(/^postgres:\/\//);
      }
    }
  });

  it("balances the heartbeat port as TCP and each backend exists in compose", () => {
    const haproxy = read("deploy/haproxy.cfg");
    const heartbeat = /frontend heartbeat\n([\s\S]*?)\n\n/.exec(haproxy)?.[1] ?? "";
    expect(heartbeat).toMatch(/mode tcp/);
    expect(heartbeat).toMatch(/bind :3001/);
    for (const [, host] of haproxy.matchAll(/^\s+server \S+ ([a-z0-9-]+)/gm)) {
      expect(Object.keys(services), `haproxy backend ${host}`).toContain(host);
    }
  });
});

describe("deploy/k8s", () => {
  it("lists every manifest in the kustomization", () => {
    const [kustomization] = parseYaml("deploy/k8s/kustomization.yaml");
    const listed = ((kustomization?.resources ?? []) as string[]).map((r) => `deploy/k8s/${r}`).sort();
    expect(listed).toEqual(k8sFiles.filter((f) => !f.endsWith("kustomization.yaml")).sort());
    for (const m of manifests) {
      expect(typeof m.apiVersion, JSON.stringify(m.metadata)).toBe("string");
      expect(typeof m.kind).toBe("string");
      expect(m.metadata?.name).toMatch(/^[a-z0-9-]+$/);
    }
  });

  it("gives every Deployment probes on its own port, a Service per port and a PodDisruptionBudget", () => {
    const deployments = ofKind("Deployment");
    expect(deployments.map((d) => d.spec.template.spec.containers[0].args[0]).sort()).toEqual([
      "start:api",
      "start:heartbeat",
      "start:tunnel-agent",
    ]);
    for (const deployment of deployments) {
      const name = deployment.metadata.name;
      const labels = deployment.spec.template.metadata.labels as Record<string, string>;
      expect(matches(deployment.spec.selector.matchLabels, labels), `${name} selector`).toBe(true);
      expect(deployment.spec.replicas, name).toBeGreaterThanOrEqual(2);
      const [container] = deployment.spec.template.spec.containers as Doc[];
      expectScript(container?.args, name);
      const ports = ((container?.ports ?? []) as Doc[]).map((p) => p.name as string);
      expect(container?.livenessProbe?.httpGet?.path, name).toBe("/livez");
      expect(container?.readinessProbe?.httpGet?.path, name).toBe("/readyz");
      expect(ports, name).toContain(container?.livenessProbe?.httpGet?.port);
      expect(ports, name).toContain(container?.readinessProbe?.httpGet?.port);
      for (const port of ports) {
        const service = ofKind("Service").find(
          (s) => matches(s.spec.selector, labels) && (s.spec.ports as Doc[]).some((p) => p.targetPort === port),
        );
        expect(service, `${name}: a Service for port ${port}`).toBeDefined();
      }
      const budget = ofKind("PodDisruptionBudget").find((p) => matches(p.spec.selector.matchLabels, labels));
      expect(budget, `${name}: a PodDisruptionBudget`).toBeDefined();
      expect(budget?.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
    }
    // Every Service selects some pods.
    for (const service of ofKind("Service")) {
      expect(
        deployments.some((d) => matches(service.spec.selector, d.spec.template.metadata.labels)),
        service.metadata.name,
      ).toBe(true);
    }
  });

  it("has the migration step as a Job running the admin CLI", () => {
    const [job] = ofKind("Job");
    expect(job?.spec.template.spec.containers[0].args).toEqual(["admin", "--", "migrate"]);
    expectScript(job?.spec.template.spec.containers[0].args, "migration job");
  });
});

describe("configuration documentation", () => {
  it("documents in docs/operations.md every environment variable a config.ts reads", () => {
    const sources = [
      ...["apps/api", "apps/heartbeat-daemon", "apps/tunnel-agent", "apps/all-in-one", "apps/router-simulator"]
        .map((app) => `${app}/src/config.ts`)
        .filter((file) => existsSync(path.join(root, file))),
      ...readdirSync(path.join(root, "packages/shared/src/env"))
        .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
        .map((f) => `packages/shared/src/env/${f}`),
    ];
    const names = new Set<string>();
    for (const file of sources) {
      const text = read(file);
      for (const [, name] of text.matchAll(/\benv[A-Za-z]*\(\s*env,\s*"([A-Z][A-Z0-9_]+)"/g)) names.add(name ?? "");
      for (const [, name] of text.matchAll(/\benv(?:\.|\[")([A-Z][A-Z0-9_]+)/g)) names.add(name ?? "");
    }
    expect(names.size).toBeGreaterThan(20);
    const docs = read("docs/operations.md");
    const missing = [...names].filter((name) => !docs.includes(`\`${name}\``)).sort();
    expect(missing).toEqual([]);
  });
});
