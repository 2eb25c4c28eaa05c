// Public hosted invoice page (`hosted_invoice_url`) and a minimal one-page PDF (`invoice_pdf`).
import { formatDate, formatMoney, minorUnitDigits } from "../billing-service.ts";
import { RawResponse } from "../http-router.ts";
import type { Router } from "../http-router.ts";
import type { Invoice } from "../stripe-types.ts";

function plainAmount(amount: number, currency: string): string {
  const digits = minorUnitDigits(currency);
  return `${(amount / 10 ** digits).toFixed(digits)} ${currency.toUpperCase()}`;
}

function summary(inv: Invoice): string[] {
  return [
    `Invoice ${inv.number ?? inv.id}`,
    `Status: ${inv.status}`,
    `Date: ${formatDate(inv.status_transitions.finalized_at ?? inv.created)}`,
    ...(inv.due_date ? [`Due: ${formatDate(inv.due_date)}`] : []),
    `Bill to: ${inv.customer_name ?? inv.customer_email ?? inv.customer}`,
    "",
    ...inv.lines.data.map((l) => `${l.description ?? "Item"}    ${plainAmount(l.amount, l.currency)}`),
    "",
    `Total: ${plainAmount(inv.total, inv.currency)}`,
    `Amount due: ${plainAmount(inv.amount_due, inv.currency)}`,
    `Amount paid: ${plainAmount(inv.amount_paid, inv.currency)}`,
  ];
}

export function renderPdf(lines: string[]): Buffer {
  const esc = (s: string) =>
    s
      .replace(/×/g, "x")
      .replace(/[^\x20-\x7e]/g, "?")
      .replace(/([\\()])/g, "\\$1");
  const content = ["BT", "/F1 11 Tf", "16 TL", "50 800 Td", ...lines.map((l) => `(${esc(l)}) '`), "ET"].join("\n");
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    `<< /Length ${Buffer.byteLength(content, "latin1")} >>\nstream\n${content}\nendstream`,
  ];
  let out = "%PDF-1.4\n";
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(Buffer.byteLength(out, "latin1"));
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, "latin1");
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  out += offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("");
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}

const html = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function registerHostedInvoiceRoutes(router: Router): void {
  router.get(
    "/i/:id",
    ({ store, path }) => {
      const inv = store.invoice(path.id ?? "");
      const rows = inv.lines.data
        .map(
          (l) =>
            `<tr><td>${html(l.description ?? "Item")}</td><td>${html(formatMoney(l.amount, l.currency))}</td></tr>`,
        )
        .join("");
      const body = `<!doctype html><html><head><meta charset="utf-8"><title>Invoice ${html(inv.number ?? inv.id)}</title></head>
<body><h1>Invoice ${html(inv.number ?? inv.id)}</h1><p>Status: ${html(inv.status)}</p>
<table>${rows}</table><p>Amount due: ${html(formatMoney(inv.amount_due, inv.currency))}</p>
<p><a href="${html(inv.invoice_pdf ?? "")}">Download PDF</a></p></body></html>`;
      return new RawResponse(body, "text/html; charset=utf-8");
    },
    { public: true },
  );

  router.get(
    "/i/:id/pdf",
    ({ store, path }) => new RawResponse(renderPdf(summary(store.invoice(path.id ?? ""))), "application/pdf"),
    { public: true },
  );
}
