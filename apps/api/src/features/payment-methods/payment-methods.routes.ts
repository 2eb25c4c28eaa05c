import { router } from "../../trpc/init.ts";
import { createSetupIntent } from "./create-setup-intent.ts";
import { deletePaymentMethod } from "./delete-payment-method.ts";
import { listPaymentMethods } from "./list-payment-methods.ts";
import { savePaymentMethod } from "./save-payment-method.ts";

export const paymentMethodsRouter = router({
  createSetupIntent,
  save: savePaymentMethod,
  list: listPaymentMethods,
  delete: deletePaymentMethod,
});
