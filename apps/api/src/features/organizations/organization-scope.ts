import { type Database, OrganizationsRepository, type Query } from "@fleet/db";
import { AppError } from "@fleet/shared";

/** An organization and the ones above it, nearest first. */
export type OrganizationChain = Array<{ id: string; parentId: string | null; name: string }>;

/**
 * The chain of `organizationId` when it is the token's organization or below it; anything else,
 * however it exists, is "not found" (docs/api.md "Organizations": never a hint that it exists).
 */
export const chainInSubtree = async (
  query: Query,
  tokenOrganizationId: string,
  organizationId: string,
): Promise<OrganizationChain> => {
  const chain = await new OrganizationsRepository(query).chain(organizationId);
  if (!chain.some((o) => o.id === tokenOrganizationId)) throw new AppError("not_found", "Organization not found.");
  return chain;
};

export type TenancyDb = Pick<Database, "query" | "transaction">;
