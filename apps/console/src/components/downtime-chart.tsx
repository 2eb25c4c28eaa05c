/** One bar per hour, height = minutes down (0-60); inline SVG keeps the bundle free of a chart library. */
export const DowntimeChart = ({ hours }: { hours: ReadonlyArray<{ date: string; minutes_down: number }> }) => {
  const width = 24 * 14;
  const height = 80;
  const total = hours.reduce((sum, h) => sum + h.minutes_down, 0);
  const label = `Downtime per hour over the last ${hours.length} hours: ${Math.round(total * 10) / 10} minutes in total`;
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${height + 16}`} role="img" aria-label={label}>
        <line x1="0" y1={height} x2={width} y2={height} className="axis" />
        {hours.map((hour, i) => {
          const h = Math.min(60, hour.minutes_down) * (height / 60);
          return (
            <g key={hour.date}>
              <rect x={i * 14 + 2} y={0} width="10" height={height} className="slot" />
              <rect x={i * 14 + 2} y={height - h} width="10" height={Math.max(h, 0)} className="bar" />
              <title>{`${hour.date.slice(11, 16)} UTC: ${hour.minutes_down} min down`}</title>
            </g>
          );
        })}
        {hours.map((hour, i) =>
          i % 6 === 0 ? (
            <text key={`t${hour.date}`} x={i * 14 + 2} y={height + 13} className="tick">
              {hour.date.slice(11, 16)}
            </text>
          ) : null,
        )}
      </svg>
      <figcaption>{label} (UTC hours, oldest first).</figcaption>
    </figure>
  );
};
