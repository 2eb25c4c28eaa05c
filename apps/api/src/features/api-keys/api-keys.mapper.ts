import type { ApiKeyRecord } from "@fleet/db";
import { formatIsoUtc, type TApiKey } from "@fleet/shared";

export const toApiKeyResponse = (key: ApiKeyRecord): TApiKey => ({
  id: key.id,
  name: key.name,
  prefix: key.prefix,
  scopes: key.scopes,
  created_at: formatIsoUtc(key.createdAt),
  expires_at: key.expiresAt ? formatIsoUtc(key.expiresAt) : null,
  last_used_at: key.lastUsedAt ? formatIsoUtc(key.lastUsedAt) : null,
});
