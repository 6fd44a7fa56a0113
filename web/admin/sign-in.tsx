/** Sign-in: the admin token, checked with one admin call before it is kept (sessionStorage). */
import { useState } from 'preact/hooks';
import { AdminClient, AdminError } from './client.js';
import { Alert } from './ui.js';

export function SignIn(props: {
  readonly onSignedIn: (token: string) => void;
  readonly notice: string | null;
}) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const candidate = token.trim();
    if (candidate === '') {
      setError('Enter the admin token.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      // Any bearer-guarded read proves the token; the health summary is the smallest.
      await new AdminClient(candidate, () => {}).get('/health');
      props.onSignedIn(candidate);
    } catch (caught) {
      setError(
        caught instanceof AdminError && caught.status === 401
          ? 'The server refused this token.'
          : caught instanceof Error
            ? caught.message
            : String(caught),
      );
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <form class="panel sign-in-card" onSubmit={submit} noValidate>
        <h1>
          <span class="brand">OpenSpot</span> operator console
        </h1>
        {props.notice !== null && <Alert kind="warn">{props.notice}</Alert>}
        <div class="field">
          <label for="admin-token">Admin token</label>
          <input
            id="admin-token"
            name="admin-token"
            type="password"
            autoComplete="off"
            spellcheck={false}
            value={token}
            aria-invalid={error !== null}
            aria-describedby="admin-token-hint"
            onInput={(e) => setToken(e.currentTarget.value)}
          />
          <small id="admin-token-hint" class="muted">
            <code>ADMIN_TOKEN</code>, or the file <code>DATA_DIR/admin-token</code>. Kept in this tab only
            (sessionStorage) and sent as the bearer token.
          </small>
        </div>
        {error !== null && (
          <p class="alert alert-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
