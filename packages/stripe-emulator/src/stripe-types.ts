// Wire shapes of the Stripe objects the emulator serves (subset of Stripe's API reference).

export type Metadata = Record<string, string>;

export interface ListObject<T> {
  object: "list";
  data: T[];
  has_more: boolean;
  url: string;
}

export interface Address {
  city: string | null;
  country: string | null;
  line1: string | null;
  line2: string | null;
  postal_code: string | null;
  state: string | null;
}

export interface Customer {
  id: string;
  object: "customer";
  address: Address | null;
  balance: number;
  created: number;
  currency: string | null;
  default_source: null;
  delinquent: boolean;
  description: string | null;
  discount: null;
  email: string | null;
  invoice_prefix: string;
  invoice_settings: {
    custom_fields: null;
    default_payment_method: string | null;
    footer: string | null;
    rendering_options: null;
  };
  livemode: false;
  metadata: Metadata;
  name: string | null;
  next_invoice_sequence: number;
  phone: string | null;
  preferred_locales: string[];
  shipping: null;
  tax_exempt: "none";
  test_clock: null;
}

export interface BillingDetails {
  address: Address;
  email: string | null;
  name: string | null;
  phone: string | null;
  tax_id: string | null;
}

export interface CardDetails {
  brand: string;
  checks: { address_line1_check: null; address_postal_code_check: null; cvc_check: "pass" | null };
  country: string | null;
  display_brand: string;
  exp_month: number;
  exp_year: number;
  fingerprint: string;
  funding: string;
  generated_from: null;
  last4: string;
  networks: { available: string[]; preferred: null };
  regulated_status: "unregulated";
  three_d_secure_usage: { supported: boolean };
  wallet: null;
}

export interface PaymentMethod {
  id: string;
  object: "payment_method";
  allow_redisplay: "unspecified" | "limited" | "always";
  billing_details: BillingDetails;
  card: CardDetails;
  created: number;
  customer: string | null;
  livemode: false;
  metadata: Metadata;
  type: "card";
}

export interface SetupError {
  code: string;
  decline_code?: string;
  doc_url: string;
  message: string;
  payment_method?: PaymentMethod;
  type: "card_error";
}

export type SetupIntentStatus = "requires_payment_method" | "requires_confirmation" | "succeeded" | "canceled";

export interface SetupIntent {
  id: string;
  object: "setup_intent";
  allowed_payment_method_types: string[] | null;
  application: null;
  automatic_payment_methods: null;
  cancellation_reason: string | null;
  client_secret: string;
  created: number;
  customer: string | null;
  description: string | null;
  excluded_payment_method_types: string[] | null;
  last_setup_error: SetupError | null;
  latest_attempt: null;
  livemode: false;
  mandate: null;
  metadata: Metadata;
  next_action: null;
  on_behalf_of: null;
  payment_method: string | null;
  payment_method_options: Record<string, unknown>;
  payment_method_types: string[];
  single_use_mandate: null;
  status: SetupIntentStatus;
  usage: "off_session" | "on_session";
}

export interface Product {
  id: string;
  object: "product";
  active: boolean;
  created: number;
  default_price: string | null;
  description: string | null;
  images: string[];
  livemode: false;
  marketing_features: unknown[];
  metadata: Metadata;
  name: string;
  package_dimensions: null;
  shippable: null;
  statement_descriptor: null;
  tax_code: null;
  type: "service";
  unit_label: null;
  updated: number;
  url: null;
}

export type Interval = "day" | "week" | "month" | "year";

export interface Price {
  id: string;
  object: "price";
  active: boolean;
  billing_scheme: "per_unit";
  created: number;
  currency: string;
  custom_unit_amount: null;
  livemode: false;
  lookup_key: string | null;
  metadata: Metadata;
  nickname: string | null;
  product: string;
  recurring: {
    interval: Interval;
    interval_count: number;
    meter: null;
    trial_period_days: null;
    usage_type: "licensed";
  } | null;
  tax_behavior: "unspecified";
  tiers_mode: null;
  transform_quantity: null;
  type: "one_time" | "recurring";
  unit_amount: number;
  unit_amount_decimal: string;
}

export interface Period {
  start: number;
  end: number;
}

export interface Pricing {
  price_details: { price: string; product: string };
  type: "price_details";
  unit_amount_decimal: string;
}

export interface InvoiceItem {
  id: string;
  object: "invoiceitem";
  amount: number;
  currency: string;
  customer: string;
  date: number;
  description: string | null;
  discountable: boolean;
  discounts: string[];
  invoice: string | null;
  livemode: false;
  metadata: Metadata;
  parent: {
    type: "subscription_details";
    subscription_details: { subscription: string; subscription_item: string | null };
  } | null;
  period: Period;
  pricing: Pricing | null;
  proration: boolean;
  quantity: number;
  quantity_decimal: string;
  tax_rates: unknown[];
  test_clock: null;
}

export interface InvoiceLineItem {
  id: string;
  object: "line_item";
  amount: number;
  currency: string;
  description: string | null;
  discount_amounts: unknown[];
  discountable: boolean;
  discounts: string[];
  invoice: string;
  livemode: false;
  metadata: Metadata;
  parent: {
    type: "invoice_item_details" | "subscription_item_details";
    invoice_item_details: {
      invoice_item: string;
      proration: boolean;
      proration_details: { credited_items: null };
      subscription: string | null;
    } | null;
    subscription_item_details: {
      invoice_item: null;
      proration: boolean;
      proration_details: { credited_items: null };
      subscription: string;
      subscription_item: string;
    } | null;
  };
  period: Period;
  pretax_credit_amounts: unknown[];
  pricing: Pricing | null;
  quantity: number;
  quantity_decimal: string;
  subscription: string | null;
  subtotal: number;
  taxes: unknown[];
}

export type InvoiceStatus = "draft" | "open" | "paid" | "uncollectible" | "void";
export type CollectionMethod = "charge_automatically" | "send_invoice";

export interface Invoice {
  id: string;
  object: "invoice";
  account_country: string;
  account_name: string;
  amount_due: number;
  amount_overpaid: number;
  amount_paid: number;
  amount_remaining: number;
  amount_shipping: number;
  application: null;
  attempt_count: number;
  attempted: boolean;
  auto_advance: boolean;
  automatic_tax: { disabled_reason: null; enabled: false; liability: null; provider: null; status: null };
  automatically_finalizes_at: number | null;
  billing_reason: "manual" | "subscription_create" | "subscription_update" | "subscription_cycle";
  collection_method: CollectionMethod;
  created: number;
  currency: string;
  custom_fields: null;
  customer: string;
  customer_address: Address | null;
  customer_email: string | null;
  customer_name: string | null;
  customer_phone: string | null;
  customer_shipping: null;
  customer_tax_exempt: "none";
  customer_tax_ids: unknown[];
  default_payment_method: string | null;
  default_source: null;
  default_tax_rates: unknown[];
  description: string | null;
  discounts: string[];
  due_date: number | null;
  effective_at: number | null;
  ending_balance: number | null;
  footer: string | null;
  from_invoice: null;
  hosted_invoice_url: string | null;
  invoice_pdf: string | null;
  issuer: { type: "self" };
  last_finalization_error: null;
  latest_revision: null;
  lines: ListObject<InvoiceLineItem>;
  livemode: false;
  metadata: Metadata;
  next_payment_attempt: number | null;
  number: string | null;
  on_behalf_of: null;
  paid: boolean;
  paid_out_of_band: boolean;
  parent: {
    type: "subscription_details";
    quote_details: null;
    subscription_details: { metadata: Metadata; subscription: string };
  } | null;
  payment_settings: { default_mandate: null; payment_method_options: null; payment_method_types: null };
  period_end: number;
  period_start: number;
  post_payment_credit_notes_amount: number;
  pre_payment_credit_notes_amount: number;
  receipt_number: null;
  rendering: null;
  shipping_cost: null;
  shipping_details: null;
  starting_balance: number;
  statement_descriptor: null;
  status: InvoiceStatus;
  status_transitions: {
    finalized_at: number | null;
    marked_uncollectible_at: number | null;
    paid_at: number | null;
    voided_at: number | null;
  };
  subscription: string | null;
  subtotal: number;
  subtotal_excluding_tax: number;
  tax: number | null;
  test_clock: null;
  total: number;
  total_discount_amounts: unknown[];
  total_excluding_tax: number;
  total_pretax_credit_amounts: unknown[];
  total_taxes: unknown[];
  webhooks_delivered_at: number | null;
}

export interface Plan {
  id: string;
  object: "plan";
  active: boolean;
  amount: number;
  amount_decimal: string;
  billing_scheme: "per_unit";
  created: number;
  currency: string;
  interval: Interval;
  interval_count: number;
  livemode: false;
  metadata: Metadata;
  nickname: string | null;
  product: string;
  tiers_mode: null;
  transform_usage: null;
  trial_period_days: null;
  usage_type: "licensed";
}

export interface SubscriptionItem {
  id: string;
  object: "subscription_item";
  created: number;
  current_period_end: number;
  current_period_start: number;
  discounts: string[];
  metadata: Metadata;
  plan: Plan;
  price: Price;
  quantity: number;
  subscription: string;
  tax_rates: unknown[];
}

export type SubscriptionStatus =
  | "incomplete"
  | "incomplete_expired"
  | "trialing"
  | "active"
  | "past_due"
  | "canceled"
  | "unpaid"
  | "paused";

export interface Subscription {
  id: string;
  object: "subscription";
  application: null;
  billing_cycle_anchor: number;
  cancel_at: number | null;
  cancel_at_period_end: boolean;
  canceled_at: number | null;
  cancellation_details: { comment: string | null; feedback: string | null; reason: string | null };
  collection_method: CollectionMethod;
  created: number;
  currency: string;
  current_period_end: number;
  current_period_start: number;
  customer: string;
  days_until_due: number | null;
  default_payment_method: string | null;
  default_source: null;
  description: string | null;
  discounts: string[];
  ended_at: number | null;
  items: ListObject<SubscriptionItem>;
  latest_invoice: string | null;
  livemode: false;
  metadata: Metadata;
  pending_update: null;
  schedule: null;
  start_date: number;
  status: SubscriptionStatus;
  test_clock: null;
  trial_end: null;
  trial_start: null;
}
