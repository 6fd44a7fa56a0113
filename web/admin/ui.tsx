/** Small building blocks of the console: labelled fields, alerts, copy buttons, async state. */
import type { ComponentChildren, JSX } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { AdminError } from './client.js';

let nextId = 0;
/** A stable id per component instance, for label/input pairs. */
export function useId(prefix: string): string {
  const ref = useRef<string>();
  if (ref.current === undefined) ref.current = `${prefix}-${++nextId}`;
  return ref.current;
}

/** An error from a form submission: either on one of the form's fields or for the whole form. */
export interface FormError {
  readonly field?: string;
  readonly message: string;
  readonly recorded?: AdminError['recorded'];
  readonly code?: string;
}

export const formError = (error: unknown, fields: readonly string[]): FormError => {
  if (error instanceof AdminError) {
    const onField = error.field !== undefined && fields.includes(error.field);
    return {
      ...(onField ? { field: error.field } : {}),
      message: error.message,
      code: error.code,
      ...(error.recorded ? { recorded: error.recorded } : {}),
    };
  }
  return { message: error instanceof Error ? error.message : String(error) };
};

interface FieldProps {
  readonly label: string;
  readonly name: string;
  readonly error?: FormError | null;
  readonly hint?: ComponentChildren;
  readonly children: (id: string, invalid: boolean, describedBy: string | undefined) => JSX.Element;
  readonly class?: string;
}

/** A label, its control (rendered by `children` with the ids to use), a hint and the field's error. */
export function Field(props: FieldProps) {
  const id = useId(`f-${props.name}`);
  const invalid = props.error?.field === props.name;
  const hintId = props.hint === undefined ? undefined : `${id}-hint`;
  const errorId = invalid ? `${id}-error` : undefined;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ') || undefined;
  return (
    <div class={`field ${props.class ?? ''}`}>
      <label for={id}>{props.label}</label>
      {props.children(id, invalid, describedBy)}
      {props.hint !== undefined && (
        <small id={hintId} class="muted">
          {props.hint}
        </small>
      )}
      {invalid && (
        <small id={errorId} class="field-error" role="alert">
          {props.error?.message}
        </small>
      )}
    </div>
  );
}

/** The form-level error: shown when it is not on one of the form's fields. */
export function FormAlert({ error }: { readonly error: FormError | null }) {
  if (error === null || error.field !== undefined) return null;
  return (
    <p class="alert alert-error" role="alert">
      {error.message}
    </p>
  );
}

export function Alert(props: {
  readonly kind: 'ok' | 'error' | 'warn' | 'info';
  readonly children: ComponentChildren;
}) {
  return (
    <div class={`alert alert-${props.kind}`} role={props.kind === 'error' ? 'alert' : 'status'}>
      {props.children}
    </div>
  );
}

export function Panel(props: {
  readonly title: ComponentChildren;
  readonly actions?: ComponentChildren;
  readonly children: ComponentChildren;
  readonly class?: string;
}) {
  const id = useId('panel');
  return (
    <section class={`panel ${props.class ?? ''}`} aria-labelledby={id}>
      <header class="panel-head">
        <h2 id={id}>{props.title}</h2>
        {props.actions}
      </header>
      <div class="panel-body">{props.children}</div>
    </section>
  );
}

/** Copies `text`; falls back to selecting it in a hidden field where the Clipboard API is absent (plain http). */
export function CopyButton({ text, label }: { readonly text: string; readonly label: string }) {
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  const copy = async () => {
    try {
      if (navigator.clipboard === undefined) throw new Error('no clipboard API');
      await navigator.clipboard.writeText(text);
      setCopied('yes');
    } catch {
      const area = document.createElement('textarea');
      area.value = text;
      area.setAttribute('readonly', '');
      area.className = 'visually-hidden';
      document.body.append(area);
      area.select();
      const ok = document.execCommand('copy');
      area.remove();
      setCopied(ok ? 'yes' : 'failed');
    }
  };
  useEffect(() => {
    if (copied === null) return;
    const timer = setTimeout(() => setCopied(null), 2000);
    return () => clearTimeout(timer);
  }, [copied]);
  return (
    <button type="button" class="copy" onClick={copy} aria-label={label}>
      {copied === 'yes' ? 'Copied' : copied === 'failed' ? 'Select and copy' : 'Copy'}
    </button>
  );
}

/** Loads `load` on mount and whenever `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]) {
  const [state, setState] = useState<{ value?: T; error?: string; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const value = await load();
      if (mine === generation.current) setState({ value, loading: false });
    } catch (error) {
      if (mine === generation.current)
        setState((s) => ({
          ...s,
          error: error instanceof Error ? error.message : String(error),
          loading: false,
        }));
    }
  }, deps);
  useEffect(() => {
    void reload();
  }, [reload]);
  return { ...state, reload };
}

/** ISO time as the operator's local date and time, seconds included. */
export const localTime = (iso: string | null): string => {
  if (iso === null) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
};

/** A decimal string is zero (any number of zero digits). */
export const isZero = (decimal: string): boolean => /^0*(\.0*)?$/.test(decimal);
