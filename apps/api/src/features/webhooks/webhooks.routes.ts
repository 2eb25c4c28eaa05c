import { router } from "../../trpc/init.ts";
import { createWebhook } from "./create-webhook.ts";
import { deleteWebhook } from "./delete-webhook.ts";
import { listWebhookDeliveries } from "./list-webhook-deliveries.ts";
import { listWebhooks } from "./list-webhooks.ts";
import { testWebhook } from "./test-webhook.ts";

export const webhooksRouter = router({
  create: createWebhook,
  list: listWebhooks,
  delete: deleteWebhook,
  test: testWebhook,
  deliveries: listWebhookDeliveries,
});
