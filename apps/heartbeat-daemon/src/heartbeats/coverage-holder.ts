import type { CoverageRecord } from "@fleet/db";

/** The daemons' coverage record as this process last read it (at start, then every sweep). */
export interface CoverageHolder {
  current: CoverageRecord | null;
}
