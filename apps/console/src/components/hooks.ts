import { useEffect, useState } from "react";

export const usePageTitle = (title: string) => {
  useEffect(() => {
    document.title = `${title} · Fleet console`;
  }, [title]);
};

/** The current time, ticking every `ms` (the forward countdowns). */
export const useNow = (ms = 1_000): number => {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
};

/** "1:04:09" / "4:09" from milliseconds. */
export const countdown = (ms: number): string => {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const mm = h > 0 ? String(m).padStart(2, "0") : String(m);
  return `${h > 0 ? `${h}:` : ""}${mm}:${String(s).padStart(2, "0")}`;
};
