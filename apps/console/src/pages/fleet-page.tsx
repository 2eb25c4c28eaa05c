import { keepPreviousData, useInfiniteQuery, useQuery } from "@tanstack/react-query";
import { useDeferredValue, useState } from "react";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { Link } from "../navigation.tsx";
import { type Router, useTRPC } from "../trpc.ts";

type Sort = "name" | "last_seen" | "cpu" | "memory" | "temperature";
type Status = "all" | "online" | "offline";

/** Routers a page of the fleet list holds (docs/console.md "Fleet"). */
export const FLEET_PAGE_SIZE = 100;

/** What the router calls itself, else the name it was enrolled with, else its id. */
export const routerLabel = (router: Pick<Router, "identity" | "name" | "id">) =>
  router.identity || router.name || `Router ${router.id.slice(0, 8)}`;

/** A latest health value (null: never reported), whole numbers with its unit. */
const measure = (value: number | null | undefined, unit: string) =>
  value === null || value === undefined ? "—" : `${Math.round(value)} ${unit}`;

/** The latest-health columns, each sortable on the server, worst (highest) first. */
const HEALTH_COLUMNS = [
  { sort: "cpu", title: "CPU" },
  { sort: "memory", title: "Memory" },
  { sort: "temperature", title: "Temperature" },
] as const;

export const StatusBadge = ({ online }: { online: boolean }) => (
  <span className={online ? "badge online" : "badge offline"}>{online ? "Online" : "Offline"}</span>
);

/**
 * docs/console.md "Fleet": the team's routers a page at a time, searched, filtered and sorted by
 * the server; counts from `routers.counts`; online state live from `routers.onStatus`.
 */
export const FleetPage = () => {
  usePageTitle("Fleet");
  const trpc = useTRPC();
  const [search, setSearch] = useState("");
  // Name first: the order an index serves, so a fleet of thousands shows its first page at once.
  const [sort, setSort] = useState<Sort>("name");
  const [status, setStatus] = useState<Status>("all");
  // Typing stays responsive; the list follows the settled text.
  const q = useDeferredValue(search.trim());
  const [tagInput, setTagInput] = useState("");
  const tag = useDeferredValue(tagInput.trim());
  const counts = useQuery(trpc.routers.counts.queryOptions());
  const list = useInfiniteQuery(
    trpc.routers.list.infiniteQueryOptions(
      {
        limit: FLEET_PAGE_SIZE,
        sort,
        ...(q ? { q } : {}),
        ...(tag ? { tag } : {}),
        ...(status === "all" ? {} : { status }),
      },
      { getNextPageParam: (page) => page.next_cursor ?? undefined, placeholderData: keepPreviousData },
    ),
  );
  const shown = list.data?.pages.flatMap((page) => page.data) ?? [];
  const total = counts.data?.total;
  const filtered = q !== "" || tag !== "" || status !== "all";

  return (
    <section aria-labelledby="fleet-title">
      <div className="page-head">
        <h1 id="fleet-title">Fleet</h1>
        <Link to="/enroll" className="button">
          Enroll a router
        </Link>
      </div>
      {counts.data ? (
        <ul className="counts" aria-label="Router counts">
          <li>
            <strong>{counts.data.total}</strong> routers
          </li>
          <li>
            <strong>{counts.data.online}</strong> online
          </li>
          <li>
            <strong>{counts.data.offline}</strong> offline
          </li>
        </ul>
      ) : null}
      <div className="toolbar">
        <div className="field inline">
          <label htmlFor="fleet-search">Search routers</label>
          <input id="fleet-search" type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        </div>
        <div className="field inline">
          <label htmlFor="fleet-tag">Tag</label>
          <input id="fleet-tag" type="search" value={tagInput} onChange={(e) => setTagInput(e.target.value)} />
        </div>
        <div className="field inline">
          <label htmlFor="fleet-status">Status</label>
          <select id="fleet-status" value={status} onChange={(e) => setStatus(e.target.value as Status)}>
            <option value="all">All</option>
            <option value="online">Online</option>
            <option value="offline">Offline</option>
          </select>
        </div>
        <div className="field inline">
          <label htmlFor="fleet-sort">Sort by</label>
          <select id="fleet-sort" value={sort} onChange={(e) => setSort(e.target.value as Sort)}>
            <option value="name">Name</option>
            <option value="last_seen">Last seen, newest first</option>
            <option value="cpu">CPU load, highest first</option>
            <option value="memory">Memory used, highest first</option>
            <option value="temperature">Temperature, highest first</option>
          </select>
        </div>
      </div>
      <QueryState isPending={list.isPending} error={list.error ?? counts.error} what="routers" />
      {total === 0 ? (
        <p>
          No routers yet. <Link to="/enroll">Enroll your first router</Link>.
        </p>
      ) : null}
      {shown.length > 0 ? (
        <table aria-label="Routers">
          <thead>
            <tr>
              <th scope="col">Router</th>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Model</th>
              <th scope="col">RouterOS</th>
              {HEALTH_COLUMNS.map((column) => (
                <th key={column.sort} scope="col" aria-sort={sort === column.sort ? "descending" : undefined}>
                  <button
                    type="button"
                    className="sort"
                    aria-label={`Sort by ${column.title}, highest first`}
                    onClick={() => setSort(column.sort)}
                  >
                    {column.title}
                  </button>
                </th>
              ))}
              <th scope="col">Last seen</th>
              <th scope="col">From</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((router) => (
              <tr key={router.id}>
                <th scope="row">
                  <Link to={`/routers/${router.id}`}>{routerLabel(router)}</Link>
                </th>
                <td>{router.name || "—"}</td>
                <td>
                  <StatusBadge online={router.has_pulse} />
                </td>
                <td>{router.model || "—"}</td>
                <td>{router.software_version || "—"}</td>
                <td>{measure(router.cpu_load, "%")}</td>
                <td>{measure(router.memory_used_percent, "%")}</td>
                <td>{measure(router.temperature, "°C")}</td>
                <td>{router.last_seen}</td>
                <td>{router.last_seen_from ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {list.hasNextPage ? (
        <button type="button" onClick={() => void list.fetchNextPage()} disabled={list.isFetchingNextPage}>
          {list.isFetchingNextPage ? "Loading…" : `Show ${FLEET_PAGE_SIZE} more`}
        </button>
      ) : null}
      {list.data && filtered && shown.length === 0 ? <p>No router matches.</p> : null}
    </section>
  );
};
