// /v1/products and /v1/prices.
import type { EmulatorStore } from "../emulator-store.ts";
import type { Router } from "../http-router.ts";
import { paginate } from "../list-pagination.ts";
import { applyMetadata, bool, currency, int, obj, oneOf, reqStr, str } from "../request-params.ts";
import type { Params } from "../request-params.ts";
import { invalidRequest, missingParam } from "../stripe-errors.ts";
import type { Interval, Price, Product } from "../stripe-types.ts";

function createProduct(store: EmulatorStore, p: Params, label = (k: string) => k): Product {
  const now = store.nowSeconds();
  const id = str(p, "id") ?? store.newId("prod");
  if (store.products.has(id))
    throw invalidRequest(`Product already exists.`, { code: "resource_already_exists", param: "id" });
  const product: Product = {
    id,
    object: "product",
    active: bool(p, "active") ?? true,
    created: now,
    default_price: null,
    description: str(p, "description") ?? null,
    images: [],
    livemode: false,
    marketing_features: [],
    metadata: applyMetadata(p),
    name: reqStr(p, "name", label("name")),
    package_dimensions: null,
    shippable: null,
    statement_descriptor: null,
    tax_code: null,
    type: "service",
    unit_label: null,
    updated: now,
    url: null,
  };
  store.products.set(id, product);
  return product;
}

export function registerCatalogRoutes(router: Router): void {
  router.post("/v1/products", ({ store, params }) => createProduct(store, params));
  router.get("/v1/products/:id", ({ store, path }) => store.product(path.id ?? ""));
  router.post("/v1/products/:id", ({ store, path, params }) => {
    const product = store.product(path.id ?? "");
    product.name = str(params, "name") ?? product.name;
    const description = str(params, "description");
    if (description !== undefined) product.description = description;
    product.active = bool(params, "active") ?? product.active;
    const defaultPrice = str(params, "default_price");
    if (defaultPrice !== undefined)
      product.default_price = defaultPrice && store.price(defaultPrice, "default_price").id;
    product.metadata = applyMetadata(params, product.metadata);
    product.updated = store.nowSeconds();
    return product;
  });
  router.get("/v1/products", ({ store, params }) => {
    const active = bool(params, "active");
    const all = [...store.products.values()].filter((p) => active === undefined || p.active === active);
    return paginate(all, params, "/v1/products", "product");
  });

  router.post("/v1/prices", ({ store, params }) => {
    const productData = obj(params, "product_data");
    const productId = str(params, "product");
    if (!productId && !productData) throw missingParam("product");
    const product = productId
      ? store.product(productId, "product")
      : createProduct(store, productData ?? {}, (k) => `product_data[${k}]`);
    const cur = currency(params);
    if (!cur) throw missingParam("currency");
    const unitAmount = int(params, "unit_amount");
    if (unitAmount === undefined) throw missingParam("unit_amount");
    if (unitAmount < 0) throw invalidRequest("Invalid unit_amount: must be non-negative", { param: "unit_amount" });
    const recurring = obj(params, "recurring");
    const interval = recurring
      ? oneOf(recurring, "interval", ["day", "week", "month", "year"] as const, "recurring[interval]")
      : undefined;
    if (recurring && !interval) throw missingParam("recurring[interval]");
    const price: Price = {
      id: store.newId("price"),
      object: "price",
      active: bool(params, "active") ?? true,
      billing_scheme: "per_unit",
      created: store.nowSeconds(),
      currency: cur,
      custom_unit_amount: null,
      livemode: false,
      lookup_key: str(params, "lookup_key") ?? null,
      metadata: applyMetadata(params),
      nickname: str(params, "nickname") ?? null,
      product: product.id,
      recurring:
        recurring && interval
          ? {
              interval: interval as Interval,
              interval_count: int(recurring, "interval_count", "recurring[interval_count]") ?? 1,
              meter: null,
              trial_period_days: null,
              usage_type: "licensed",
            }
          : null,
      tax_behavior: "unspecified",
      tiers_mode: null,
      transform_quantity: null,
      type: recurring ? "recurring" : "one_time",
      unit_amount: unitAmount,
      unit_amount_decimal: String(unitAmount),
    };
    store.prices.set(price.id, price);
    return price;
  });
  router.get("/v1/prices/:id", ({ store, path }) => store.price(path.id ?? ""));
  router.post("/v1/prices/:id", ({ store, path, params }) => {
    const price = store.price(path.id ?? "");
    price.active = bool(params, "active") ?? price.active;
    const nickname = str(params, "nickname");
    if (nickname !== undefined) price.nickname = nickname;
    price.metadata = applyMetadata(params, price.metadata);
    return price;
  });
  router.get("/v1/prices", ({ store, params }) => {
    const product = str(params, "product");
    const active = bool(params, "active");
    const all = [...store.prices.values()].filter(
      (p) => (!product || p.product === product) && (active === undefined || p.active === active),
    );
    return paginate(all, params, "/v1/prices", "price");
  });
}
