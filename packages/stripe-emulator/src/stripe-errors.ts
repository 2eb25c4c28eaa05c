// Stripe-shaped API errors: {"error": {type, code, message, param, ...}} with Stripe's HTTP statuses.

export type StripeErrorType = "invalid_request_error" | "card_error" | "api_error" | "idempotency_error";

export interface StripeErrorBody {
  type: StripeErrorType;
  message: string;
  code?: string;
  param?: string;
  decline_code?: string;
  doc_url?: string;
  [extra: string]: unknown;
}

export class StripeApiError extends Error {
  readonly status: number;
  readonly body: StripeErrorBody;

  constructor(status: number, body: StripeErrorBody) {
    super(body.message);
    this.status = status;
    this.body =
      body.code && !body.doc_url ? { ...body, doc_url: `https://stripe.com/docs/error-codes/${body.code}` } : body;
  }
}

export function invalidRequest(message: string, extra: Partial<StripeErrorBody> = {}, status = 400): StripeApiError {
  return new StripeApiError(status, { type: "invalid_request_error", message, ...extra });
}

export function missingParam(param: string): StripeApiError {
  return invalidRequest(`Missing required param: ${param}.`, { code: "parameter_missing", param });
}

export function invalidParam(param: string, message: string, code?: string): StripeApiError {
  return invalidRequest(message, code ? { code, param } : { param });
}

/** `param` given → the id came from the request body (400); otherwise from the URL (404). */
export function noSuch(resource: string, id: string, param?: string): StripeApiError {
  return invalidRequest(
    `No such ${resource}: '${id}'`,
    { code: "resource_missing", param: param ?? "id" },
    param ? 400 : 404,
  );
}

export interface CardDecline {
  code: string;
  decline_code?: string;
  message: string;
}

export function cardError(decline: CardDecline, extra: Partial<StripeErrorBody> = {}): StripeApiError {
  const body: StripeErrorBody = { type: "card_error", code: decline.code, message: decline.message, ...extra };
  if (decline.decline_code) body.decline_code = decline.decline_code;
  return new StripeApiError(402, body);
}
