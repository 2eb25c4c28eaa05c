import { useState } from "react";

/** Copies `text`; says so in a live region. Where the clipboard is refused, it says that instead. */
export const CopyButton = ({ text, label }: { text: string; label: string }) => {
  const [said, setSaid] = useState("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid("Copied");
    } catch {
      setSaid("Copy refused by the browser: select the text and copy it");
    }
  };
  return (
    <span className="copy">
      <button type="button" onClick={copy} aria-label={label}>
        Copy
      </button>
      <span role="status" className="copy-status">
        {said}
      </span>
    </span>
  );
};
