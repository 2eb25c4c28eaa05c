/**
 * A time series as lines (docs/console.md "Router"): one polyline per series, broken where a
 * sample is missing, with an optional min/max band behind the first series (hourly rollups).
 * Inline SVG like the downtime charts: a chart library would cost more of the bundle budget than
 * the whole page (docs/console.md "Bundle budget"), and these charts need nothing but lines.
 */
export interface ChartPoint {
  /** Milliseconds since the epoch. */
  at: number;
  value: number | null;
  min?: number | null;
  max?: number | null;
}

export interface ChartSeries {
  name: string;
  points: readonly ChartPoint[];
}

const WIDTH = 480;
const HEIGHT = 100;
const TOP = 4;

const formatValue = (value: number, unit: string): string => {
  if (unit === "bit/s") {
    const units = ["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"];
    let v = value;
    let i = 0;
    while (v >= 1000 && i < units.length - 1) {
      v /= 1000;
      i += 1;
    }
    return `${v >= 100 ? Math.round(v) : Math.round(v * 10) / 10} ${units[i]}`;
  }
  return `${Math.round(value * 10) / 10} ${unit}`;
};

/** The line segments of one series: consecutive points with a value, as SVG point lists. */
const segments = (points: readonly ChartPoint[], x: (at: number) => number, y: (v: number) => number): string[] => {
  const out: string[] = [];
  let current: string[] = [];
  for (const p of points) {
    if (p.value === null || !Number.isFinite(p.value)) {
      if (current.length > 0) out.push(current.join(" "));
      current = [];
      continue;
    }
    current.push(`${x(p.at).toFixed(1)},${y(p.value).toFixed(1)}`);
  }
  if (current.length > 0) out.push(current.join(" "));
  return out;
};

export const LineChart = ({
  title,
  unit,
  series,
  from,
  to,
  fixedMax,
}: {
  title: string;
  unit: string;
  series: readonly ChartSeries[];
  from: number;
  to: number;
  /** The top of the scale (100 for percentages); else the largest value. */
  fixedMax?: number;
}) => {
  const values = series.flatMap((s) => s.points.flatMap((p) => [p.value, p.max ?? null]));
  const known = values.filter((v): v is number => v !== null && Number.isFinite(v));
  const top = fixedMax ?? Math.max(1, ...known) * 1.1;
  const span = Math.max(1, to - from);
  const x = (at: number) => ((at - from) / span) * WIDTH;
  const y = (v: number) => TOP + (HEIGHT - TOP) * (1 - Math.min(Math.max(v, 0), top) / top);
  const summary = series
    .map((s) => {
      const latest = [...s.points].reverse().find((p) => p.value !== null)?.value;
      const peak = s.points.reduce<number | null>((m, p) => {
        const v = p.max ?? p.value;
        return v === null || v === undefined ? m : m === null ? v : Math.max(m, v);
      }, null);
      return latest === undefined || latest === null
        ? `${s.name}: no samples`
        : `${s.name}: latest ${formatValue(latest, unit)}, highest ${formatValue(peak ?? latest, unit)}`;
    })
    .join("; ");
  const label = `${title}. ${summary}`;
  const band = series[0]?.points.filter((p) => p.min !== undefined && p.min !== null && p.max !== null) ?? [];
  const bandPath =
    band.length > 1
      ? `M${band.map((p) => `${x(p.at).toFixed(1)},${y(p.max ?? 0).toFixed(1)}`).join(" L")} L${[...band]
          .reverse()
          .map((p) => `${x(p.at).toFixed(1)},${y(p.min ?? 0).toFixed(1)}`)
          .join(" L")} Z`
      : undefined;
  const day = (at: number) => new Date(at).toISOString().slice(5, 16).replace("T", " ");
  return (
    <figure className="chart line-chart">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT + 16}`} role="img" aria-label={label}>
        <line x1="0" y1={HEIGHT} x2={WIDTH} y2={HEIGHT} className="axis" />
        {bandPath ? <path d={bandPath} className="band" /> : null}
        {series.map((s, i) =>
          segments(s.points, x, y).map((points) =>
            points.includes(" ") ? (
              <polyline key={`${s.name}-${points.slice(0, 24)}`} points={points} className={`line line-${i}`} />
            ) : (
              // A lone sample (a new router, or one between gaps) is a dot.
              <circle
                key={`${s.name}-${points}`}
                cx={points.split(",")[0]}
                cy={points.split(",")[1]}
                r="2"
                className={`dot line-${i}`}
              />
            ),
          ),
        )}
        <text x="2" y="10" className="tick">
          {formatValue(top, unit)}
        </text>
        <text x="0" y={HEIGHT + 13} className="tick">
          {day(from)}
        </text>
        <text x={WIDTH} y={HEIGHT + 13} className="tick end">
          {day(to)} UTC
        </text>
      </svg>
      <figcaption>
        {series.length > 1
          ? series.map((s, i) => (
              <span key={s.name} className={`legend legend-${i}`}>
                {s.name}{" "}
              </span>
            ))
          : null}
        {label}
      </figcaption>
    </figure>
  );
};
