import { describe, expect, it } from "vitest";
import { healthHeartbeatStatements, isHealthPingTarget } from "./health-script.ts";
import { renderRouterOsScript, RouterOsScriptError } from "./routeros-script.ts";

describe("the heartbeat's health statements", () => {
  it("read RouterOS 7's resource, health, interface and ping commands into $hb", () => {
    const text = renderRouterOsScript(healthHeartbeatStatements("100.64.0.1"));
    expect(text).toContain(':set ($hres->"cpu_load") [/system resource get cpu-load]');
    expect(text).toContain(':set ($hres->"memory_free") [/system resource get free-memory]');
    expect(text).toContain('[/system health get [find where name="temperature"] value]');
    expect(text).toContain(':foreach hkind in=[:toarray "ether,wlan,wifi,wg,pppoe-out,pppoe-in,vlan"] do={');
    expect(text).toContain(":foreach hif in=[/interface find type=$hkind] do={");
    expect(text).toContain(":if ([:len $hifs] < 64) do={");
    expect(text).toContain(":set ($hifs->[:len $hifs]) $hent");
    expect(text).toContain(":set hrecs [/ping as-value address=100.64.0.1 count=5]");
    expect(text).toContain(':local hms [:tonum (($hrec->"time") * 1000)]');
    expect(text).toContain(':set ($hping->"rtt_avg_ms") ($hsum / $hrcvd)');
    expect(text).toContain(':set ($hb->"ping") $hping');
  });

  it("leave the ping out without a target", () => {
    const text = renderRouterOsScript(healthHeartbeatStatements(undefined));
    expect(text).not.toContain("/ping");
    expect(text).toContain(':set ($hb->"resources") $hres');
  });

  it.each(["192.0.2.1", "hub.example.net", "gw-1"])("take %j as a ping target", (target) => {
    expect(isHealthPingTarget(target)).toBe(true);
    expect(renderRouterOsScript(healthHeartbeatStatements(target))).toContain(`address=${target} count=5`);
  });

  it.each(["", "192.0.2.1 count=1000", 'x"; /system reboot', "$x", "a;b", "-x", `${"a".repeat(64)}.net`])(
    "refuse %j as a ping target",
    (target) => {
      expect(isHealthPingTarget(target)).toBe(false);
      expect(() => healthHeartbeatStatements(target)).toThrow(RouterOsScriptError);
    },
  );
});
