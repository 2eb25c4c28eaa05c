import { type ChangeEvent, useState } from "react";
import { fieldErrors, messageOf } from "../trpc.ts";

/**
 * A form's values and the props that bind one control to them (docs/console.md "Forms"): its
 * name, its value, its change, and the server's errors for it. `judged(error)` takes the last
 * submit's error: `errors` by the server's names, `field(name)` spreads into a `Field`, `SelectField` or `TextAreaField`, and `unplaced` is the
 * message of an error no shown field carries (a quota, a conflict), for `FormError`.
 */
export const useFormValues = <F extends Record<string, string>>(
  initial: F,
  /** The server's name for a control's value where the body nests it (`country` → `address.country`). */
  serverName: (name: keyof F & string) => string = (name) => name,
) => {
  const [values, setValues] = useState<F>(initial);
  /** `shownElsewhere`: server names of what the form shows outside these values (a checkbox group). */
  const judged = (error: unknown, shownElsewhere: readonly string[] = []) => {
    const errors = fieldErrors(error);
    const names = [...(Object.keys(initial) as Array<keyof F & string>).map(serverName), ...shownElsewhere];
    return {
      errors,
      unplaced: error && !names.some((name) => errors[name]) ? messageOf(error) : undefined,
      field: (name: keyof F & string) => ({
        name,
        value: values[name],
        errors: errors[serverName(name)],
        onChange: (event: ChangeEvent<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>) =>
          setValues((current) => ({ ...current, [name]: event.target.value })),
      }),
    };
  };
  return { values, setValues, judged };
};

/** A number field's text as the server should judge it: a number when it is one, else the text. */
export const numberOrText = (text: string): number =>
  text.trim() !== "" && Number.isFinite(Number(text)) ? Number(text) : (text as unknown as number);
