import { useQueryClient } from "@tanstack/react-query";
import { useEffect } from "react";
import { OrganizationSwitcher } from "./components/organization-switcher.tsx";
import { connection, useConnectionLost } from "./connection.ts";
import { useLiveStatus } from "./live-status.ts";
import { Link, useLocation } from "./navigation.tsx";
import { ApiKeysPage } from "./pages/api-keys-page.tsx";
import { AuditLogPage } from "./pages/audit-log-page.tsx";
import { BillingPage } from "./pages/billing-page.tsx";
import { ChangePage } from "./pages/change-page.tsx";
import { ChangesPage } from "./pages/changes-page.tsx";
import { CustomersPage } from "./pages/customers-page.tsx";
import { EnrollPage } from "./pages/enroll-page.tsx";
import { FleetPage } from "./pages/fleet-page.tsx";
import { InvitationPage } from "./pages/invitation-page.tsx";
import { MembersPage } from "./pages/members-page.tsx";
import { NotificationsPage } from "./pages/notifications-page.tsx";
import { RouterPage } from "./pages/router-page.tsx";
import { WebhooksPage } from "./pages/webhooks-page.tsx";
import { providerSession } from "./provider-session.ts";
import { useTRPCClient } from "./trpc.ts";

const NAV = [
  { to: "/", label: "Fleet" },
  { to: "/enroll", label: "Enroll a router" },
  { to: "/changes", label: "Changes" },
  { to: "/billing", label: "Billing" },
  { to: "/api-keys", label: "API keys" },
  { to: "/webhooks", label: "Webhooks" },
  { to: "/notifications", label: "Notifications" },
  { to: "/audit-log", label: "Audit log" },
  { to: "/customers", label: "Customers" },
  { to: "/members", label: "Members" },
] as const;

const pageFor = (path: string) => {
  const router = /^\/routers\/([^/]+)$/.exec(path);
  if (router?.[1]) return <RouterPage routerId={decodeURIComponent(router[1])} />;
  const change = /^\/changes\/([^/]+)$/.exec(path);
  if (change?.[1]) return <ChangePage changeId={decodeURIComponent(change[1])} />;
  const invitation = /^\/invitations\/([^/]+)$/.exec(path);
  if (invitation?.[1]) return <InvitationPage token={decodeURIComponent(invitation[1])} />;
  switch (path) {
    case "/":
      return <FleetPage />;
    case "/enroll":
      return <EnrollPage />;
    case "/changes":
      return <ChangesPage />;
    case "/billing":
      return <BillingPage />;
    case "/api-keys":
      return <ApiKeysPage />;
    case "/webhooks":
      return <WebhooksPage />;
    case "/notifications":
      return <NotificationsPage />;
    case "/audit-log":
      return <AuditLogPage />;
    case "/customers":
      return <CustomersPage />;
    case "/members":
      return <MembersPage />;
    default:
      return (
        <section aria-labelledby="not-found">
          <h1 id="not-found">Page not found</h1>
          <p>
            <Link to="/">Back to the fleet</Link>
          </p>
        </section>
      );
  }
};

export const Shell = () => {
  const { path } = useLocation();
  const lost = useConnectionLost();
  useLiveStatus();
  const queryClient = useQueryClient();
  const client = useTRPCClient();
  // The browser knows first when its network goes; the next answer after it returns clears the banner.
  useEffect(() => {
    const offline = () => connection.set(true);
    const online = () => void queryClient.invalidateQueries();
    window.addEventListener("offline", offline);
    window.addEventListener("online", online);
    return () => {
      window.removeEventListener("offline", offline);
      window.removeEventListener("online", online);
    };
  }, [queryClient]);
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Fleet console</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((item) => {
              const current =
                item.to === "/"
                  ? path === "/" || path.startsWith("/routers/")
                  : path === item.to || path.startsWith(`${item.to}/`);
              return (
                <li key={item.to}>
                  <Link to={item.to} aria-current={current ? "page" : undefined}>
                    {item.label}
                  </Link>
                </li>
              );
            })}
          </ul>
        </nav>
        <OrganizationSwitcher />
        <button type="button" className="secondary" onClick={() => void providerSession.signOut(client)}>
          Sign out
        </button>
      </header>
      {lost ? (
        <div role="alert" className="banner">
          Connection to the server lost. Reconnecting; live views catch up when it returns.
        </div>
      ) : null}
      <main id="main" tabIndex={-1}>
        {pageFor(path)}
      </main>
    </div>
  );
};
