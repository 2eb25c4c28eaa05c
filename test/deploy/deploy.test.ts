import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadAdminConfig } from "@fleet/all-in-one";
import { loadApiConfig } from "@fleet/api/config";
import { HEARTBEAT_NODE_FLAGS, loadHeartbeatConfig } from "@fleet/heartbeat-daemon";
import { SECRET_VARIABLES, wireguardPublicKey } from "@fleet/shared";
import { loadTunnelAgentConfig } from "@fleet/tunnel-agent";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

/**
 * What can be checked of the deployment files without a container engine or a cluster
 * (docs/operations.md "Deployment"): the kustomize overlays render (with `kubectl kustomize`),
 * every rendered object validates against the Kubernetes API schemas (`kubernetes-models`), the
 * pods are locked down and wired to real ports, files and Secrets, each app's rendered
 * configuration is one its start-up accepts in production, the compose file is wired the same
 * way, and HAProxy accepts its configuration (`haproxy -c`).
 */
const root = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => readFileSync(path.join(root, file), "utf8");
const rootPackage = JSON.parse(read("package.json")) as { workspaces: string[]; scripts: Record<string, string> };

type Doc = Record<string, any>;
const parseYamlText = (text: string, where: string): Doc[] => {
  const docs = parseAllDocuments(text, { merge: true });
  for (const doc of docs) expect(doc.errors, `${where}: ${doc.errors.join("; ")}`).toEqual([]);
  return docs.map((doc) => doc.toJS({ maxAliasCount: 1000 }) as Doc).filter((d) => d !== null);
};

const OVERLAYS = ["example", "production"] as const;
const render = (overlay: string): Doc[] =>
  parseYamlText(
    execFileSync("kubectl", ["kustomize", path.join(root, "deploy/k8s/overlays", overlay)], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    }),
    overlay,
  );
const rendered = Object.fromEntries(OVERLAYS.map((o) => [o, render(o)])) as Record<(typeof OVERLAYS)[number], Doc[]>;
const example = rendered.example;
const ofKind = (docs: Doc[], kind: string) => docs.filter((m) => m.kind === kind);
const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

/**
 * Field names, which kubernetes-models' JSON-schema check lets through when unknown: every object
 * becomes a typed object literal in a scratch TypeScript file (`const o: IDeployment = {...}`),
 * so a misspelt or misplaced field is an excess property at any depth and the compiler names it.
 */
const unknownFields = (objects: Doc[]): string[] => {
  const dir = mkdtempSync(path.join(root, "test/deploy/.k8s-types-"));
  try {
    const file = path.join(dir, "manifests.ts");
    const lines = objects.map(
      (object, i) =>
        `export const o${i}: import("kubernetes-models/${object.apiVersion}/${object.kind}").I${object.kind} = ${JSON.stringify(object)};`,
    );
    writeFileSync(file, lines.join("\n"));
    const program = ts.createProgram([file], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: [],
    });
    return ts
      .getPreEmitDiagnostics(program)
      .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n").split("\n")[0] ?? "");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/** `apps/v1` -> kubernetes-models/apps/v1; core `v1` -> kubernetes-models/v1. */
const validate = async (given: Doc): Promise<void> => {
  // A Secret's base64 may be wrapped over lines (kustomize 5 does); the API server ignores them.
  const object =
    given.kind === "Secret"
      ? {
          ...given,
          data: Object.fromEntries(
            Object.entries((given.data ?? {}) as Record<string, string>).map(([k, v]) => [k, v.replace(/\s/g, "")]),
          ),
        }
      : given;
  const module = (await import(`kubernetes-models/${object.apiVersion}`)) as Record<
    string,
    new (
      data: Doc,
    ) => { validate(): void }
  >;
  const Model = module[object.kind];
  if (!Model) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`);
  new Model(object).validate();
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
    expect(dockerfile).toMatch(/^USER 10001:10001$/m);
    // Production dependencies npm installed under a workspace (not hoisted) reach the image too.
    const lock = JSON.parse(read("package-lock.json")) as { packages: Record<string, { dev?: boolean }> };
    const nested = Object.entries(lock.packages).filter(
      ([at, entry]) => !at.startsWith("node_modules/") && at.includes("/node_modules/") && !entry.dev,
    );
    if (nested.length > 0) expect(dockerfile, nested[0]?.[0]).toMatch(/^COPY --from=deps \/app \.\/$/m);
    // The hub (TUNNEL_MODE=wireguard) runs from the same image: ip, wg and wireguard-go in it.
    const runtime = dockerfile.slice(dockerfile.indexOf(" AS runtime"));
    for (const tool of ["iproute2", "wireguard-tools", "wireguard-go"]) expect(runtime, tool).toContain(` ${tool}`);
    // ssh2's native crypto is compiled in a stage of its own: the runtime takes the built file, no compiler.
    expect(runtime).toMatch(/^COPY --from=ssh2-crypto \S+\/build\/Release\/sshcrypto\.node /m);
    expect(runtime).not.toMatch(/\bg\+\+|\bmake\b|python3/);
  });

  it("starts the heartbeat daemon with its V8 flags, in the image and in `npm run start:heartbeat`", () => {
    const dockerfile = read("Dockerfile");
    const stage = dockerfile.slice(
      dockerfile.indexOf(" AS heartbeat\n"),
      dockerfile.indexOf("\nFROM ", dockerfile.indexOf(" AS heartbeat\n")),
    );
    const entry = /^ENTRYPOINT (\[.*\])$/m.exec(stage)?.[1];
    // The entry point, not the CMD: compose's `command` and Kubernetes' `args` replace only the CMD.
    expect(JSON.parse(entry ?? "[]")).toEqual(["node", ...HEARTBEAT_NODE_FLAGS]);
    const script = rootPackage.scripts["start:heartbeat"] ?? "";
    expect(script).toBe(`exec node ${HEARTBEAT_NODE_FLAGS.join(" ")} apps/heartbeat-daemon/src/main.ts`);
  });
});

describe("deploy/k8s (kustomize base and overlays)", () => {
  it("renders both overlays, and every object validates against the Kubernetes API schemas", async () => {
    for (const overlay of OVERLAYS) {
      const docs = rendered[overlay];
      expect(docs.length, overlay).toBeGreaterThan(20);
      for (const object of docs) await validate(object);
    }
    expect(unknownFields([...rendered.example, ...rendered.production])).toEqual([]);
  });

  it("the checks catch a wrong type and a misspelt field at any depth", async () => {
    const [deployment] = ofKind(example, "Deployment");
    const wrongType = structuredClone(deployment) as Doc;
    wrongType.spec.replicas = "two";
    await expect(validate(wrongType)).rejects.toThrow(/replicas/);
    const inContainer = structuredClone(deployment) as Doc;
    inContainer.spec.template.spec.containers[0].readinesProbe = { httpGet: { path: "/readyz", port: 3000 } };
    const inPod = structuredClone(deployment) as Doc;
    inPod.spec.template.spec.automountServiceAcountToken = false;
    const problems = unknownFields([inContainer, inPod]);
    expect(problems).toHaveLength(2);
    expect(problems.join("\n")).toMatch(/readinesProbe/);
    expect(problems.join("\n")).toMatch(/automountServiceAcountToken/);
  });

  it("pins images (no :latest) and locks every pod down", () => {
    for (const deployment of ofKind(example, "Deployment")) {
      const name = deployment.metadata.name as string;
      const pod = deployment.spec.template.spec as Doc;
      expect(pod.automountServiceAccountToken, name).toBe(false);
      expect(pod.securityContext?.seccompProfile?.type, name).toBe("RuntimeDefault");
      for (const container of [...(pod.initContainers ?? []), ...pod.containers] as Doc[]) {
        const where = `${name}/${container.name}`;
        expect(container.image, where).toMatch(/^[^:]+:(?!latest$)[\w.-]+$/);
        const security = { ...pod.securityContext, ...container.securityContext } as Doc;
        expect(security.allowPrivilegeEscalation, where).toBe(false);
        expect(security.readOnlyRootFilesystem, where).toBe(true);
        expect(security.capabilities?.drop, where).toEqual(["ALL"]);
        expect(Number.isInteger(security.runAsUser), `${where}: numeric runAsUser`).toBe(true);
        if (name === "fleet-tunnel-hub") {
          // The hub alone needs NET_ADMIN, which Kubernetes grants only to a root process.
          expect(security.capabilities?.add, where).toEqual(["NET_ADMIN"]);
        } else {
          expect(security.runAsNonRoot, where).toBe(true);
          expect(security.runAsUser, where).toBeGreaterThan(0);
          expect(security.capabilities?.add, where).toBeUndefined();
        }
        // The image's ENTRYPOINT is node: args name an entry file that exists.
        expect(existsSync(path.join(root, container.args?.[0] ?? "")), `${where}: ${container.args}`).toBe(true);
        expect(
          container.envFrom?.some((source: Doc) => source.secretRef),
          `${where}: no envFrom of a Secret`,
        ).toBe(false);
      }
    }
  });

  it("gives every app probes that fit start-up, Services on real ports and a disruption budget", () => {
    const deployments = ofKind(example, "Deployment");
    // TUNNEL_MODE=wireguard: the hub is the one tunnel agent (only its interface reaches routers).
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([
      "fleet-api",
      "fleet-heartbeat",
      "fleet-tunnel-hub",
    ]);
    for (const deployment of deployments) {
      const name = deployment.metadata.name as string;
      const labels = deployment.spec.template.metadata.labels as Record<string, string>;
      expect(matches(deployment.spec.selector.matchLabels, labels), `${name} selector`).toBe(true);
      const [container] = deployment.spec.template.spec.containers as Doc[];
      const ports = ((container?.ports ?? []) as Doc[]).map((p) => p.name as string);
      expect(container?.livenessProbe?.httpGet?.path, name).toBe("/livez");
      expect(container?.readinessProbe?.httpGet?.path, name).toBe("/readyz");
      // Apps migrate before they listen: the startup probe allows minutes, liveness starts after.
      const startup = container?.startupProbe as Doc;
      expect(startup?.httpGet?.path, name).toBe("/readyz");
      expect(startup.periodSeconds * startup.failureThreshold, name).toBeGreaterThanOrEqual(120);
      for (const probe of ["livenessProbe", "readinessProbe", "startupProbe"]) {
        expect(ports, `${name} ${probe}`).toContain(container?.[probe]?.httpGet?.port);
      }
      if (name !== "fleet-tunnel-hub") {
        expect(deployment.spec.replicas, name).toBeGreaterThanOrEqual(2);
        const budget = ofKind(example, "PodDisruptionBudget").find((p) => matches(p.spec.selector.matchLabels, labels));
        expect(budget?.spec.minAvailable, `${name}: a PodDisruptionBudget`).toBeLessThan(deployment.spec.replicas);
      }
    }
    for (const service of ofKind(example, "Service")) {
      const pods = deployments.filter((d) => matches(service.spec.selector, d.spec.template.metadata.labels));
      expect(pods.length, service.metadata.name).toBe(1);
      const containerPorts = pods[0]?.spec.template.spec.containers[0].ports as Doc[];
      for (const port of service.spec.ports as Doc[]) {
        const target = containerPorts.find((p) => p.name === port.targetPort || p.containerPort === port.targetPort);
        const hostsRange = typeof port.targetPort === "number" && pods[0]?.metadata.name === "fleet-tunnel-hub";
        expect(target !== undefined || hostsRange, `${service.metadata.name}: ${port.targetPort}`).toBe(true);
      }
    }
  });

  it("exposes the entry point's whole port range, the tunnel's UDP port, and /metrics only inside", () => {
    const config = ofKind(example, "ConfigMap").find((c) => c.metadata.name.startsWith("fleet-common")) as Doc;
    const [from, to] = (config.data.ENTRY_POINT_PORTS as string).split("-").map(Number);
    const entry = ofKind(example, "Service").find((s) => s.metadata.name === "fleet-entry-point");
    expect(entry?.spec.type).toBe("LoadBalancer");
    expect(((entry?.spec.ports ?? []) as Doc[]).map((p) => p.port)).toEqual(
      Array.from({ length: (to ?? 0) - (from ?? 0) + 1 }, (_, i) => (from ?? 0) + i),
    );
    const policy = ofKind(example, "NetworkPolicy").find((p) => p.metadata.name === "fleet-entry-point");
    expect(policy?.spec.ingress[0].ports[0]).toMatchObject({ port: from, endPort: to });
    const hub = ofKind(example, "Service").find((s) => s.metadata.name === "fleet-tunnel-hub");
    expect(hub?.spec.ports).toEqual([expect.objectContaining({ port: 51820, protocol: "UDP" })]);
    // /metrics lives on METRICS_PORT, which no externally reachable Service carries.
    const metricsPort = Number(config.data.METRICS_PORT);
    for (const service of ofKind(example, "Service")) {
      const carries = (service.spec.ports as Doc[]).some((p) => p.port === metricsPort);
      if (carries) expect(service.spec.clusterIP, service.metadata.name).toBe("None");
    }
    const metricsPolicy = ofKind(example, "NetworkPolicy").find((p) => p.metadata.name === "fleet-metrics");
    expect(metricsPolicy?.spec.ingress[0].ports).toEqual([{ port: metricsPort, protocol: "TCP" }]);
    expect(ofKind(example, "NetworkPolicy").find((p) => p.metadata.name === "fleet-default-deny")).toBeDefined();
  });

  describe("each app's rendered configuration starts in production", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "fleet-k8s-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** The environment a container sees, with its Secret files written under `dir`. */
    const environmentOf = (deploymentName: string, containerName?: string): Record<string, string> => {
      const deployment = ofKind(example, "Deployment").find((d) => d.metadata.name === deploymentName) as Doc;
      const pod = deployment.spec.template.spec as Doc;
      const all = [...(pod.initContainers ?? []), ...pod.containers] as Doc[];
      const container = containerName ? all.find((c) => c.name === containerName) : (pod.containers as Doc[])[0];
      const env: Record<string, string> = {};
      for (const source of container?.envFrom ?? []) {
        const map = ofKind(example, "ConfigMap").find((c) => c.metadata.name === source.configMapRef.name);
        expect(map, `${deploymentName}: ConfigMap ${source.configMapRef.name}`).toBeDefined();
        Object.assign(env, map?.data);
      }
      for (const variable of container?.env ?? []) env[variable.name] = variable.value;
      const mounts = new Map<string, string>();
      for (const mount of container?.volumeMounts ?? []) {
        const volume = (pod.volumes as Doc[]).find((v) => v.name === mount.name);
        if (!volume?.secret) continue;
        const secret = ofKind(example, "Secret").find((s) => s.metadata.name === volume.secret.secretName);
        expect(secret, `${deploymentName}: Secret ${volume.secret.secretName}`).toBeDefined();
        expect(volume.secret.defaultMode, `${deploymentName}: ${mount.name} mode`).toBe(0o440);
        for (const [key, value] of Object.entries((secret?.data ?? {}) as Record<string, string>)) {
          const file = path.join(dir, deploymentName, mount.name, key);
          execFileSync("mkdir", ["-p", path.dirname(file)]);
          writeFileSync(file, Buffer.from(value, "base64"));
          mounts.set(`${mount.mountPath}/${key}`, file);
        }
      }
      // Every file a variable names must be a key of a Secret mounted in this container.
      for (const [name, value] of Object.entries(env)) {
        if (!name.endsWith("_FILE") && name !== "TUNNEL_SSH_KEY") continue;
        expect(mounts.has(value), `${deploymentName}: ${name}=${value} is a mounted Secret key`).toBe(true);
        env[name] = mounts.get(value) ?? value;
      }
      return env;
    };

    it("API: token key, Stripe key, webhook key and the agent's public key, each from its own Secret", () => {
      const env = environmentOf("fleet-api");
      expect(env.NODE_ENV).toBe("production");
      const config = loadApiConfig(env);
      expect(config.auth.jwtSecret).toBeDefined();
      expect(config.stripe.secretKey).toMatch(/^sk_/);
      expect(config.events.webhookEncryptionKey).toBeDefined();
      expect(config.adoption.sshPublicKey).toMatch(/^ssh-ed25519 /);
      expect(config.metricsPort).toBe(9100);
      expect(env.TUNNEL_SSH_KEY).toBeUndefined();
    });

    it("heartbeat daemon and hub: no Stripe or token keys reach them; the hub gets the SSH key", () => {
      const heartbeat = environmentOf("fleet-heartbeat");
      expect(loadHeartbeatConfig(heartbeat).databaseUrl).toMatch(/^postgres/);
      const env = environmentOf("fleet-tunnel-hub");
      expect(loadTunnelAgentConfig(env).ssh.keyFile).toBeDefined();
      expect(env.JWT_SECRET_FILE).toBeUndefined();
      expect(env.STRIPE_SECRET_KEY_FILE).toBeUndefined();
      expect(heartbeat.TUNNEL_SSH_KEY).toBeUndefined();
      expect(heartbeat.JWT_SECRET_FILE).toBeUndefined();
      expect(heartbeat.ACCESS_PASSWORD_KEY_FILE).toBeUndefined();
    });

    it("API and hub run the same tunnel: wireguard mode, one endpoint, the hub's own public key", () => {
      const api = loadApiConfig(environmentOf("fleet-api"));
      const hub = loadTunnelAgentConfig(environmentOf("fleet-tunnel-hub"));
      expect(api.adoption.tunnel.mode).toBe("wireguard");
      expect(hub.tunnel.mode).toBe("wireguard");
      if (api.adoption.tunnel.mode !== "wireguard" || hub.tunnel.mode !== "wireguard") return;
      expect(api.adoption.tunnel.endpoint).toEqual(hub.tunnel.endpoint);
      expect(api.adoption.tunnel.hubAddress).toBe(hub.tunnel.hubAddress);
      expect(api.tunnelNetwork).toEqual(hub.tunnelNetwork);
      // Adoption scripts name the key the hub actually holds (the example overlay pairs them).
      expect(hub.tunnel.privateKey).toBeDefined();
      expect(api.adoption.tunnel.publicKey).toBe(wireguardPublicKey(hub.tunnel.privateKey ?? ""));
      // The API never holds the hub's private key; routers dial the port the hub listens on.
      expect(api.adoption.tunnel.privateKey).toBeUndefined();
      // wireguard-go's UAPI socket directory is writable under the read-only root filesystem.
      const hubPod = (ofKind(example, "Deployment").find((d) => d.metadata.name === "fleet-tunnel-hub") as Doc).spec
        .template.spec;
      const runMount = (hubPod.containers[0].volumeMounts as Doc[]).find((m) => m.mountPath === "/run/wireguard");
      expect((hubPod.volumes as Doc[]).find((v) => v.name === runMount?.name)?.emptyDir).toBeDefined();
      const service = ofKind(example, "Service").find((s) => s.metadata.name === "fleet-tunnel-hub") as Doc;
      const hubPorts = (ofKind(example, "Deployment").find((d) => d.metadata.name === "fleet-tunnel-hub") as Doc).spec
        .template.spec.containers[0].ports as Doc[];
      const udp = hubPorts.find((p) => p.name === service.spec.ports[0].targetPort);
      expect(udp?.containerPort).toBe(hub.tunnel.listenPort);
      expect(service.spec.ports[0].port).toBe(api.adoption.tunnel.endpoint.port);
      // The same value, not two copies that can drift apart: TUNNEL_MODE is set in no app's own
      // ConfigMap or container env, in either overlay.
      for (const overlay of OVERLAYS) {
        for (const map of ofKind(rendered[overlay], "ConfigMap")) {
          if (!map.metadata.name.startsWith("fleet-common")) {
            expect(map.data.TUNNEL_MODE, `${overlay}: ${map.metadata.name}`).toBeUndefined();
          }
        }
        for (const deployment of ofKind(rendered[overlay], "Deployment")) {
          for (const container of deployment.spec.template.spec.containers as Doc[]) {
            const names = ((container.env ?? []) as Doc[]).map((e) => e.name);
            expect(names, `${overlay}: ${deployment.metadata.name}`).not.toContain("TUNNEL_MODE");
            expect(names, `${overlay}: ${deployment.metadata.name}`).not.toContain("TUNNEL_WG_ENDPOINT");
          }
        }
      }
    });

    it("every container starts in production with its secrets, and each Secret reaches only who needs it", () => {
      const loaders: Record<string, (env: Record<string, string>) => unknown> = {
        "apps/api/src/main.ts": loadApiConfig,
        "apps/heartbeat-daemon/src/main.ts": loadHeartbeatConfig,
        "apps/tunnel-agent/src/main.ts": loadTunnelAgentConfig,
        "apps/all-in-one/src/admin/admin-cli.ts": loadAdminConfig,
      };
      const mountedInto = new Map<string, string[]>();
      for (const deployment of ofKind(example, "Deployment")) {
        const name = deployment.metadata.name as string;
        const pod = deployment.spec.template.spec as Doc;
        for (const container of [...(pod.initContainers ?? []), ...pod.containers] as Doc[]) {
          const load = loaders[container.args?.[0]];
          expect(load, `${name}/${container.name}: a known entry file`).toBeDefined();
          // environmentOf checks that every *_FILE names a mounted key; the loader then refuses
          // anything production needs that is missing (the rule the app itself applies).
          expect(() => load?.(environmentOf(name, container.name)), `${name}/${container.name}`).not.toThrow();
        }
        for (const each of [...(pod.initContainers ?? []), ...pod.containers] as Doc[]) {
          for (const mount of each.volumeMounts ?? []) {
            const volume = (pod.volumes as Doc[]).find((v) => v.name === mount.name);
            if (!volume?.secret) continue;
            // secretGenerator's names end in a content hash.
            const secret = (volume.secret.secretName as string).replace(/-[a-z0-9]{10}$/, "");
            mountedInto.set(secret, [...new Set([...(mountedInto.get(secret) ?? []), name])]);
          }
        }
      }
      const only = (secret: string) => [...(mountedInto.get(secret) ?? [])].sort();
      expect(only("fleet-tunnel-hub")).toEqual(["fleet-tunnel-hub"]);
      expect(only("fleet-agent-ssh")).toEqual(["fleet-tunnel-hub"]);
      expect(only("fleet-api")).toEqual(["fleet-api"]);
      expect(only("fleet-access-password")).toEqual(["fleet-api", "fleet-tunnel-hub"]);
      // No secret is written into a ConfigMap or an env value: only its <NAME>_FILE.
      for (const overlay of OVERLAYS) {
        for (const map of ofKind(rendered[overlay], "ConfigMap")) {
          for (const secret of SECRET_VARIABLES) expect(map.data[secret], `${overlay}: ${secret}`).toBeUndefined();
        }
      }
    });

    it("the check catches a secret left out: the API without ACCESS_PASSWORD_KEY, the hub without its key", () => {
      const { ACCESS_PASSWORD_KEY_FILE: _access, ...api } = environmentOf("fleet-api");
      expect(() => loadApiConfig(api)).toThrow(/^Invalid configuration: ACCESS_PASSWORD_KEY /);
      const { TUNNEL_WG_PRIVATE_KEY_FILE: _key, ...hub } = environmentOf("fleet-tunnel-hub");
      expect(() => loadTunnelAgentConfig(hub)).toThrow(/^Invalid configuration: TUNNEL_WG_PRIVATE_KEY /);
      const { TUNNEL_WG_PUBLIC_KEY: _public, ...apiWithoutHubKey } = environmentOf("fleet-api");
      expect(() => loadApiConfig(apiWithoutHubKey)).toThrow(/^Invalid configuration: TUNNEL_WG_PUBLIC_KEY /);
    });
  });
});

describe("deploy/compose.yaml", () => {
  const [compose] = parseYamlText(read("deploy/compose.yaml"), "compose.yaml");
  const services = (compose?.services ?? {}) as Record<string, Doc>;
  const apps = Object.entries(services).filter(([, s]) => s.build);

  it("runs PostgreSQL, a migration, 2 APIs, 2 heartbeat daemons, 2 agents and a load balancer", () => {
    const byEntry = (entry: string) => apps.filter(([, s]) => s.command?.[0] === entry).map(([name]) => name);
    expect(byEntry("apps/api/src/main.ts")).toHaveLength(2);
    expect(byEntry("apps/heartbeat-daemon/src/main.ts")).toHaveLength(2);
    expect(byEntry("apps/tunnel-agent/src/main.ts")).toHaveLength(2);
    expect(services.migrate?.command).toEqual(["apps/all-in-one/src/admin/admin-cli.ts", "migrate"]);
    expect(services.postgres?.image).toMatch(/^postgres:\d/);
    expect(services.lb?.ports).toEqual(expect.arrayContaining(["3000:3000", "3001:3001"]));
    for (const service of Object.values(services)) expect(service.image ?? "").not.toMatch(/:latest$|^[^:]+$/);
  });

  it("starts each app on an entry file that exists, after the migration, with what production needs", () => {
    for (const [name, service] of apps) {
      expect(existsSync(path.join(root, service.command?.[0] ?? "")), name).toBe(true);
      expect(service.read_only, name).toBe(true);
      expect(service.cap_drop, name).toEqual(["ALL"]);
      const env = service.environment as Record<string, string>;
      const secrets = new Set(service.secrets as string[]);
      // Every *_FILE names a secret given to this service.
      for (const [variable, value] of Object.entries(env)) {
        if (!variable.endsWith("_FILE") && variable !== "TUNNEL_SSH_KEY") continue;
        expect(secrets.has(value.replace("/run/secrets/", "")), `${name}: ${variable}`).toBe(true);
      }
      if (name === "migrate") continue;
      expect(service.depends_on?.migrate?.condition, name).toBe("service_completed_successfully");
      expect(service.healthcheck?.test?.join(" "), name).toMatch(/\/readyz/);
      expect(env.DATABASE_URL_FILE, name).toBe("/run/secrets/database_url");
      const entry = service.command?.[0] as string;
      if (entry.includes("/api/")) {
        const production = [
          "JWT_SECRET_FILE",
          "WEBHOOK_ENCRYPTION_KEY_FILE",
          "STRIPE_SECRET_KEY_FILE",
          "STRIPE_WEBHOOK_SECRET_FILE",
          "ACCESS_PASSWORD_KEY_FILE",
        ];
        for (const needed of production) expect(env[needed], `${name}: ${needed}`).toBeDefined();
        expect(env.TUNNEL_SSH_PUBLIC_KEY, name).toBeDefined();
        expect(secrets.has("tunnel_ssh_key"), `${name}: no private key`).toBe(false);
      } else {
        expect(secrets.has("jwt_secret") || secrets.has("stripe_secret_key"), `${name}: no API secrets`).toBe(false);
      }
      if (entry.includes("tunnel-agent")) {
        expect(secrets.has("tunnel_ssh_key"), name).toBe(true);
        // Shared with the API: both derive temporary router passwords from it.
        expect(env.ACCESS_PASSWORD_KEY_FILE, name).toBe("/run/secrets/access_password_key");
      }
      if (entry.includes("heartbeat")) expect(secrets.has("access_password_key"), name).toBe(false);
      // No hub in compose: every service runs the external tunnel (one mode for all).
      expect(env.TUNNEL_MODE, name).toBeUndefined();
    }
  });

  it("HAProxy accepts its configuration, resolves backends at run time and names only compose services", () => {
    const haproxy = read("deploy/haproxy.cfg");
    execFileSync("haproxy", ["-c", "-q", "-f", path.join(root, "deploy/haproxy.cfg")], { stdio: "pipe" });
    expect(haproxy).toMatch(/^resolvers docker$/m);
    expect(haproxy).toMatch(/default-server .*resolvers docker/);
    const heartbeat = /frontend heartbeat\n([\s\S]*?)\n\n/.exec(haproxy)?.[1] ?? "";
    expect(heartbeat).toMatch(/mode tcp/);
    for (const [, host] of haproxy.matchAll(/^\s+server \S+ ([a-z0-9-]+)/gm)) {
      expect(Object.keys(services), `haproxy backend ${host}`).toContain(host);
    }
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
