import { Migration } from "@mikro-orm/migrations";

/** Bytes of room a new liveness row carries until its first steady update (about a steady row's width). */
export const LIVENESS_ROOM_BYTES = 240;

/**
 * Room on every page of `router_liveness` for the next heartbeats' row versions (docs/scale.md
 * "Room on the page"). A heartbeat is a HOT update: its new row version goes on the same page, and
 * PostgreSQL prunes a page's dead versions whenever it reads the page with less free space than the
 * fillfactor leaves (25%). Rows are inserted until a page is 75% full, so every page sat at that
 * line: nearly every update was followed by a prune of the whole page on its next read (a quarter
 * of the flush's CPU, perf on PostgreSQL 15). `room` is inserted as 240 bytes and set to null by the
 * row's first steady update: pages are filled with wide rows and then hold narrow ones, so about a
 * dozen heartbeats land between two prunes (the steady flush's CPU per heartbeat, 333 rows a flush:
 * 10.4-11.4 -> 6.8-7.2 µs). The cost: the table holds about half as many rows a page (about 2x
 * its heap). Existing rows get their room here once: each grows and moves, and the pages come out
 * less full; the dead versions are vacuumed as usual.
 */
export class LivenessRoomMigration extends Migration {
  override up(): void {
    this.addSql(`alter table "router_liveness" add column "room" text null;`);
    this.addSql(`update "router_liveness" set "room" = repeat(' ', ${LIVENESS_ROOM_BYTES});`);
  }
}
