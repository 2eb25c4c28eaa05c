import { describe, expect, it } from "vitest";
import { stepLabel } from "./change-step.ts";

describe("stepLabel", () => {
  it("names the step and leaves out the agent's times", () => {
    expect(stepLabel(null)).toBe("—");
    expect(stepLabel("binary")).toBe("Backing up");
    expect(stepLabel("ran:mx1uzbbf")).toBe("Script sent");
    expect(stepLabel("confirm:mx1uzbbf:mx1v0a2c")).toBe("Confirming");
    expect(stepLabel("install:mx1uzbbf:7.16.2")).toBe("Installing 7.16.2");
    expect(stepLabel("reboot:mx1uzbbf:7.16.2")).toBe("Rebooting into 7.16.2");
    expect(stepLabel("later-kind:1")).toBe("later-kind");
  });

  it("names no step once the router's step has ended: its state says how", () => {
    expect(stepLabel("confirm:mx1uzbbf:mx1v0a2c", "running")).toBe("Confirming");
    expect(stepLabel("confirm:mx1uzbbf:mx1v0a2c", "succeeded")).toBe("—");
    expect(stepLabel("ran:mx1uzbbf", "reverted")).toBe("—");
  });
});
