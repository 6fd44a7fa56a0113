/**
 * API key and secret entry. The secret is used by WebCrypto in this page only; it is kept in
 * sessionStorage, or in localStorage when "Remember on this device" is ticked. In development a
 * local visitor can load the demo account in one click (GET /ui/demo-credentials.json).
 */
import { useState } from 'preact/hooks';
import { ApiError } from '../shared/api.js';
import { signingAvailable } from '../shared/sign.js';
import { open, type Session, type StoredAccount } from './session.js';

interface DemoAnswer {
  readonly api_key: string;
  readonly api_secret: string;
  readonly user_id: number;
}

export function SignIn(props: {
  readonly demoAvailable: boolean;
  /** Checks the account (a signed request) and keeps it; rejects with the reason. */
  readonly onSignIn: (session: Session) => Promise<void>;
}) {
  const [apiKey, setApiKey] = useState('');
  const [apiSecret, setApiSecret] = useState('');
  const [remember, setRemember] = useState(false);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  if (!signingAvailable())
    return (
      <section class="panel sign-in" aria-label="Sign in">
        <p class="field-error">
          Signing needs a secure page (https, or http on localhost/127.0.0.1): this browser offers no
          WebCrypto here. Market data still works.
        </p>
      </section>
    );

  const attempt = async (account: StoredAccount) => {
    setBusy(true);
    setError(undefined);
    try {
      await props.onSignIn(open(account, remember));
    } catch (reason) {
      setError(
        reason instanceof ApiError
          ? `${reason.message} (HTTP ${reason.status}): check the key and secret.`
          : reason instanceof Error
            ? reason.message
            : String(reason),
      );
    } finally {
      setBusy(false);
    }
  };

  const submit = (event: Event) => {
    event.preventDefault();
    if (apiKey.trim() === '' || apiSecret.trim() === '') {
      setError('Enter both the API key and the API secret.');
      return;
    }
    if (!/^[A-Za-z0-9+/=_-]+$/.test(apiSecret.trim())) {
      setError('The API secret is base64 text.');
      return;
    }
    void attempt({ apiKey: apiKey.trim(), apiSecret: apiSecret.trim() });
  };

  const loadDemo = async () => {
    setError(undefined);
    const response = await fetch('/ui/demo-credentials.json', { headers: { Accept: 'application/json' } });
    if (!response.ok) {
      setError(`The demo account is not available (HTTP ${response.status}).`);
      return;
    }
    const demo = (await response.json()) as DemoAnswer;
    setApiKey(demo.api_key);
    setApiSecret(demo.api_secret);
    await attempt({ apiKey: demo.api_key, apiSecret: demo.api_secret, userId: demo.user_id });
  };

  return (
    <form class="panel sign-in" aria-label="Sign in with an API key" onSubmit={submit} noValidate>
      <header class="panel-head">
        <h2>Account</h2>
      </header>
      <div class="field">
        <label for="api-key">API key</label>
        <input
          id="api-key"
          autoComplete="username"
          spellcheck={false}
          value={apiKey}
          onInput={(e) => setApiKey((e.currentTarget as HTMLInputElement).value)}
        />
      </div>
      <div class="field">
        <label for="api-secret">API secret</label>
        <input
          id="api-secret"
          type="password"
          autoComplete="current-password"
          spellcheck={false}
          value={apiSecret}
          onInput={(e) => setApiSecret((e.currentTarget as HTMLInputElement).value)}
        />
      </div>
      <label class="check">
        <input
          type="checkbox"
          checked={remember}
          onChange={(e) => setRemember((e.currentTarget as HTMLInputElement).checked)}
        />
        Remember on this device
      </label>
      {error !== undefined && (
        <p class="field-error" role="alert">
          {error}
        </p>
      )}
      <div class="row">
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
        {props.demoAvailable && (
          <button type="button" onClick={() => void loadDemo()} disabled={busy}>
            Use demo account
          </button>
        )}
      </div>
      <p class="muted small">
        Requests are signed in this browser; the secret is never sent.{' '}
        {remember ? 'Kept in this browser until you sign out.' : 'Forgotten when this tab closes.'}
      </p>
    </form>
  );
}
