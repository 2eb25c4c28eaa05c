import { router } from "../../trpc/init.ts";
import { listInvoices } from "./list-invoices.ts";

export const invoicesRouter = router({
  list: listInvoices,
});
