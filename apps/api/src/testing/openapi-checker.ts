import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

type Json = Record<string, any>;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

/** Rewrites document-local `$ref`s so they resolve against the document registered as `doc`. */
const rebase = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(rebase);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        k === "$ref" && typeof v === "string" && v.startsWith("#") ? `doc${v}` : rebase(v),
      ]),
    );
  }
  return value;
};

/**
 * Checks real answers against /openapi.json (docs/api.md "Errors": every status an operation can
 * answer is documented with the body really sent): the path and method exist (or the answer is
 * the 405 of an unlisted method), the status is listed, and the body validates against its schema.
 */
export const openApiChecker = (doc: Json) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema({ $id: "doc", components: doc.components }, "doc");
  const compiled = new Map<string, ValidateFunction>();
  const templates = Object.keys(doc.paths).map((template) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}/*$`),
  }));
  /** Every operation answered at least once, and each status seen, for coverage assertions. */
  const seen = new Map<string, Set<number>>();

  const check = (method: string, url: string, status: number, body: unknown): string[] => {
    const path = url.split("?")[0] as string;
    const template = templates.find((t) => t.pattern.test(path))?.template;
    if (!template) return status === 404 ? [] : [`${method} ${path}: undocumented path answered ${status}`];
    const op = doc.paths[template][method.toLowerCase()];
    if (!op) return status === 405 ? [] : [`${method} ${template}: undocumented method answered ${status}`];
    const key = `${method} ${template}`;
    const statuses = seen.get(key) ?? new Set<number>();
    statuses.add(status);
    seen.set(key, statuses);
    const response = op.responses[String(status)];
    if (!response) return [`${key}: status ${status} is not documented (${JSON.stringify(body).slice(0, 200)})`];
    const content = response.content ?? {};
    // A text answer (CSV, an export) where the operation documents a text/* type.
    if (typeof body === "string" && body !== "" && Object.keys(content).some((type) => type.startsWith("text/"))) {
      return [];
    }
    const schema = content["application/json"]?.schema;
    if (!schema) return body === undefined || body === "" ? [] : [`${key} ${status}: a body where none is documented`];
    const id = `${key} ${status}`;
    let validate = compiled.get(id);
    if (!validate) {
      validate = ajv.compile(rebase(schema) as Json);
      compiled.set(id, validate);
    }
    if (validate(body)) return [];
    return [`${id}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(body).slice(0, 300)}`];
  };
  return { check, seen };
};
