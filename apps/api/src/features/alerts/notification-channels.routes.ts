import { router } from "../../trpc/init.ts";
import { createNotificationChannel } from "./create-notification-channel.ts";
import { deleteNotificationChannel } from "./delete-notification-channel.ts";
import { getNotificationChannel } from "./get-notification-channel.ts";
import { listNotificationChannels } from "./list-notification-channels.ts";
import { listNotificationDeliveries } from "./list-notification-deliveries.ts";
import { testNotificationChannel } from "./test-notification-channel.ts";
import { updateNotificationChannel } from "./update-notification-channel.ts";

/** docs/api.md "Alerts and maintenance windows". */
export const notificationChannelsRouter = router({
  create: createNotificationChannel,
  list: listNotificationChannels,
  get: getNotificationChannel,
  update: updateNotificationChannel,
  delete: deleteNotificationChannel,
  test: testNotificationChannel,
  deliveries: listNotificationDeliveries,
});
