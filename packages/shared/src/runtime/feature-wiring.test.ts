import { describe, expect, it } from "vitest";
import { FeatureWiring } from "./feature-wiring.ts";

describe("FeatureWiring", () => {
  it("stops what was started, then closes the features, each in reverse order, once", async () => {
    const order: string[] = [];
    const wiring = new FeatureWiring(async () => void order.push("last"));
    const feature = (name: string) => ({ name, close: async () => void order.push(`close ${name}`) });
    expect(wiring.add(feature("a")).name).toBe("a");
    wiring.add(feature("b"));
    wiring.started(async () => void order.push("stop 1"));
    wiring.started(async () => void order.push("stop 2"));
    const first = wiring.close();
    expect(wiring.close()).toBe(first);
    await first;
    expect(order).toEqual(["stop 2", "stop 1", "close b", "close a", "last"]);
  });
});
