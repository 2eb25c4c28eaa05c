import {
  type InputHTMLAttributes,
  type ReactNode,
  type SelectHTMLAttributes,
  type TextareaHTMLAttributes,
  useId,
} from "react";

/**
 * A labelled control with the server's errors for it right beside it (docs/console.md "Forms"):
 * the input is marked invalid and described by its error, so a screen reader reads both.
 */
export const Field = ({
  label,
  errors,
  hint,
  ...input
}: InputHTMLAttributes<HTMLInputElement> & { label: string; errors?: string[] | undefined; hint?: ReactNode }) => {
  const id = useId();
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;
  const invalid = errors !== undefined && errors.length > 0;
  const describedBy = [invalid ? errorId : undefined, hint ? hintId : undefined].filter(Boolean).join(" ");
  return (
    <div className={invalid ? "field invalid" : "field"}>
      <label htmlFor={id}>{label}</label>
      <input id={id} aria-invalid={invalid || undefined} aria-describedby={describedBy || undefined} {...input} />
      {hint ? (
        <span id={hintId} className="hint">
          {hint}
        </span>
      ) : null}
      {invalid ? (
        <span id={errorId} className="error">
          {errors.join(" ")}
        </span>
      ) : null}
    </div>
  );
};

/** A labelled choice with the server's errors beside it, as {@link Field}. */
export const SelectField = ({
  label,
  errors,
  options,
  ...select
}: SelectHTMLAttributes<HTMLSelectElement> & {
  label: string;
  errors?: string[] | undefined;
  options: ReadonlyArray<{ value: string; label: string }>;
}) => {
  const id = useId();
  const errorId = `${id}-error`;
  const invalid = errors !== undefined && errors.length > 0;
  return (
    <div className={invalid ? "field invalid" : "field"}>
      <label htmlFor={id}>{label}</label>
      <select id={id} aria-invalid={invalid || undefined} aria-describedby={invalid ? errorId : undefined} {...select}>
        {options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      {invalid ? (
        <span id={errorId} className="error">
          {errors.join(" ")}
        </span>
      ) : null}
    </div>
  );
};

/** A labelled multi-line control with the server's errors beside it, as {@link Field}. */
export const TextAreaField = ({
  label,
  errors,
  ...textarea
}: TextareaHTMLAttributes<HTMLTextAreaElement> & { label: string; errors?: string[] | undefined }) => {
  const id = useId();
  const errorId = `${id}-error`;
  const invalid = errors !== undefined && errors.length > 0;
  return (
    <div className={invalid ? "field invalid" : "field"}>
      <label htmlFor={id}>{label}</label>
      <textarea
        id={id}
        aria-invalid={invalid || undefined}
        aria-describedby={invalid ? errorId : undefined}
        {...textarea}
      />
      {invalid ? (
        <span id={errorId} className="error">
          {errors.join(" ")}
        </span>
      ) : null}
    </div>
  );
};

/** Errors the server reported for fields this form does not show, and errors of no field. */
export const FormError = ({ message }: { message: string | undefined }) =>
  message ? (
    <p role="alert" className="form-error">
      {message}
    </p>
  ) : null;
