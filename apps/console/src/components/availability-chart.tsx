/**
 * One bar per UTC day, height = minutes down out of the day's 1440 (at least a sliver when any),
 * shaded by how much of the day was up. Inline SVG like the 24 h chart: no chart library.
 */
export const AvailabilityChart = ({
  days,
}: {
  days: ReadonlyArray<{ period_start: string; minutes_down: number; availability_percent: number }>;
}) => {
  const step = 14;
  const width = Math.max(days.length, 1) * step;
  const height = 80;
  const down = days.reduce((sum, d) => sum + d.minutes_down, 0);
  const percent = days.length === 0 ? 100 : 100 - (down / (days.length * 1440)) * 100;
  const worst = days.reduce<(typeof days)[number] | undefined>(
    (w, d) => (d.minutes_down > (w?.minutes_down ?? 0) ? d : w),
    undefined,
  );
  const label =
    `Availability per day over the last ${days.length} days: ${percent.toFixed(2)} % up, ` +
    `${Math.round(down * 100) / 100} minutes down in total`;
  const description = worst
    ? `Worst day ${worst.period_start.slice(0, 10)}: ${worst.availability_percent} % up, ${worst.minutes_down} minutes down.`
    : "No downtime on any day.";
  const descriptionId = "availability-chart-description";
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${height + 16}`} role="img" aria-label={label} aria-describedby={descriptionId}>
        <line x1="0" y1={height} x2={width} y2={height} className="axis" />
        {days.map((day, i) => {
          const minutes = Math.min(1440, day.minutes_down);
          const h = minutes > 0 ? Math.max(2, minutes * (height / 1440)) : 0;
          return (
            <g key={day.period_start}>
              <rect x={i * step + 2} y={0} width="10" height={height} className="slot" />
              <rect x={i * step + 2} y={height - h} width="10" height={h} className="bar" />
              <title>{`${day.period_start.slice(0, 10)}: ${day.availability_percent} % up, ${day.minutes_down} min down`}</title>
            </g>
          );
        })}
        {days.map((day, i) =>
          i % 7 === 0 ? (
            <text key={`t${day.period_start}`} x={i * step + 2} y={height + 13} className="tick">
              {day.period_start.slice(5, 10)}
            </text>
          ) : null,
        )}
      </svg>
      <figcaption>
        {label} (UTC days, oldest first). <span id={descriptionId}>{description}</span>
      </figcaption>
    </figure>
  );
};
