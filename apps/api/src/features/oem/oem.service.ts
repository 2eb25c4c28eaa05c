import type { RouterModelRef } from "@fleet/db";
import { AppError, type TOemInfoResponse, type TOemProduct } from "@fleet/shared";
import { toOemInfo } from "./oem.mapper.ts";

/** What the service reads: a router's reported model, and the catalogue entry for it. */
export interface OemCatalogReader {
  routerModel(teamId: string, routerId: string): Promise<RouterModelRef | null>;
  findForRouter(model: string, boardName: string): Promise<TOemProduct | null>;
}

export interface OemServiceDeps {
  catalog: OemCatalogReader;
}

/** Longest reported name echoed in an error message (values come from the router itself). */
const MAX_ECHO = 100;

/** Manufacturer data of a router (docs/api.md "OEM Information"), matched by its reported model/board. */
export class OemService {
  readonly #deps: OemServiceDeps;
  constructor(deps: OemServiceDeps) {
    this.#deps = deps;
  }

  async forRouter(teamId: string, routerId: string): Promise<TOemInfoResponse["data"]> {
    const router = await this.#deps.catalog.routerModel(teamId, routerId);
    // Unknown, malformed and other teams' ids answer alike (docs/api.md "Errors").
    if (!router) throw new AppError("not_found", "Router not found.");
    const product = await this.#deps.catalog.findForRouter(router.model, router.boardName);
    if (!product) throw new AppError("not_found", noDataMessage(router));
    return toOemInfo(product);
  }
}

const noDataMessage = ({ model, boardName }: RouterModelRef): string => {
  const m = model.trim().slice(0, MAX_ECHO);
  const b = boardName.trim().slice(0, MAX_ECHO);
  if (!m && !b) return "No manufacturer data for this router: it has not reported its model yet.";
  if (!m) return `No manufacturer data for model ${b}.`;
  if (!b || b.toLowerCase() === m.toLowerCase()) return `No manufacturer data for model ${m}.`;
  return `No manufacturer data for model ${m} (board name ${b}).`;
};
