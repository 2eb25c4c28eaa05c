import { useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";
import { usePageTitle } from "../components/hooks.ts";
import { QueryState } from "../components/query-state.tsx";
import { Link } from "../navigation.tsx";
import { type Router, useTRPC } from "../trpc.ts";

type Sort = "seen-desc" | "seen-asc" | "name";

export const routerLabel = (router: Pick<Router, "identity" | "id">) =>
  router.identity || `Router ${router.id.slice(0, 8)}`;

/** `last_seen_at` is "YYYY-MM-DD HH:MM:SS" (UTC): its text order is its time order; never seen sorts last. */
const bySort = (sort: Sort) => (a: Router, b: Router) => {
  if (sort === "name") return routerLabel(a).localeCompare(routerLabel(b));
  const x = a.last_seen_at ?? "";
  const y = b.last_seen_at ?? "";
  if (x === y) return routerLabel(a).localeCompare(routerLabel(b));
  if (!x) return 1;
  if (!y) return -1;
  return sort === "seen-desc" ? y.localeCompare(x) : x.localeCompare(y);
};

export const StatusBadge = ({ online }: { online: boolean }) => (
  <span className={online ? "badge online" : "badge offline"}>{online ? "Online" : "Offline"}</span>
);

/** docs/console.md "Fleet": every router of the team, online state live from `routers.onStatus`. */
export const FleetPage = () => {
  usePageTitle("Fleet");
  const trpc = useTRPC();
  const list = useQuery(trpc.routers.list.queryOptions());
  const [search, setSearch] = useState("");
  const [tag, setTag] = useState("");
  const [sort, setSort] = useState<Sort>("seen-desc");
  const routers = list.data?.data ?? [];
  const online = routers.filter((r) => r.has_pulse).length;
  const shown = useMemo(() => {
    const needle = search.trim().toLowerCase();
    const match = (r: Router) =>
      !needle ||
      [r.identity, r.model, r.board_name, r.serial_number, r.last_seen_from ?? "", r.id].some((v) =>
        v.toLowerCase().includes(needle),
      );
    return routers.filter((r) => match(r) && (!tag || r.tags.includes(tag))).sort(bySort(sort));
  }, [routers, search, sort, tag]);
  const tags = useMemo(() => [...new Set(routers.flatMap((r) => r.tags))].sort(), [routers]);

  return (
    <section aria-labelledby="fleet-title">
      <div className="page-head">
        <h1 id="fleet-title">Fleet</h1>
        <Link to="/enroll" className="button">
          Enroll a router
        </Link>
      </div>
      <ul className="counts" aria-label="Router counts">
        <li>
          <strong>{routers.length}</strong> routers
        </li>
        <li>
          <strong>{online}</strong> online
        </li>
        <li>
          <strong>{routers.length - online}</strong> offline
        </li>
      </ul>
      <div className="toolbar">
        <div className="field inline">
          <label htmlFor="fleet-search">Search routers</label>
          <input id="fleet-search" type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        </div>
        <div className="field inline">
          <label htmlFor="fleet-tag">Tag</label>
          <select id="fleet-tag" value={tag} onChange={(e) => setTag(e.target.value)}>
            <option value="">Any tag</option>
            {tags.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </div>
        <div className="field inline">
          <label htmlFor="fleet-sort">Sort by</label>
          <select id="fleet-sort" value={sort} onChange={(e) => setSort(e.target.value as Sort)}>
            <option value="seen-desc">Last seen, newest first</option>
            <option value="seen-asc">Last seen, oldest first</option>
            <option value="name">Name</option>
          </select>
        </div>
      </div>
      <QueryState isPending={list.isPending} error={list.error} what="routers" />
      {list.data && routers.length === 0 ? (
        <p>
          No routers yet. <Link to="/enroll">Enroll your first router</Link>.
        </p>
      ) : null}
      {shown.length > 0 ? (
        <table aria-label="Routers">
          <thead>
            <tr>
              <th scope="col">Router</th>
              <th scope="col">Status</th>
              <th scope="col">Model</th>
              <th scope="col">RouterOS</th>
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
                <td>
                  <StatusBadge online={router.has_pulse} />
                </td>
                <td>{router.model || "—"}</td>
                <td>{router.software_version || "—"}</td>
                <td>{router.last_seen}</td>
                <td>{router.last_seen_from ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {routers.length > 0 && shown.length === 0 ? <p>No router matches “{search}”.</p> : null}
    </section>
  );
};
