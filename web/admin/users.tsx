/** Users: the list (filterable), a new-user form, and one user's balances, funds and API keys. */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { AdminClient, Asset, User } from './client.js';
import { Field, FormAlert, type FormError, formError, Panel, useLoad } from './ui.js';
import { UserDetail } from './user-detail.js';

/** Rows drawn at most: the list is the whole user table, and a venue may have very many. */
const MAX_ROWS = 200;

export function UsersView(props: {
  readonly client: AdminClient;
  readonly assets: readonly Asset[];
  readonly selected: number | null;
  readonly select: (id: number | null) => void;
}) {
  const { client } = props;
  const users = useLoad(() => client.get<{ data: User[] }>('/users').then((r) => r.data), [client]);
  const [filter, setFilter] = useState('');
  const shown = useMemo(() => {
    const all = [...(users.value ?? [])].reverse(); // newest first
    const f = filter.trim().toLowerCase();
    return f === ''
      ? all
      : all.filter((u) => String(u.id) === f || (u.email ?? '').toLowerCase().includes(f));
  }, [users.value, filter]);
  const selectedUser = users.value?.find((u) => u.id === props.selected);
  // A user created elsewhere (CLI, another tab) since the list was loaded: load it again, once per id.
  const retried = useRef<number | null>(null);
  useEffect(() => {
    if (props.selected === null || users.loading || users.value === undefined || selectedUser !== undefined)
      return;
    if (retried.current === props.selected) return;
    retried.current = props.selected;
    void users.reload();
  }, [props.selected, users.loading, users.value, selectedUser, users.reload]);

  return (
    <div class={`users-layout ${props.selected === null ? '' : 'has-selection'}`}>
      <div class="stack user-index">
        <NewUser
          client={client}
          onCreated={async (user) => {
            await users.reload();
            props.select(user.id);
          }}
        />
        <Panel
          title={`Users${users.value ? ` (${users.value.length})` : ''}`}
          actions={
            <button type="button" onClick={() => users.reload()} disabled={users.loading}>
              Refresh
            </button>
          }
          class="user-list"
        >
          <div class="field">
            <label for="user-filter">Find a user</label>
            <input
              id="user-filter"
              type="search"
              placeholder="id or email"
              value={filter}
              onInput={(e) => setFilter(e.currentTarget.value)}
            />
          </div>
          {users.error !== undefined && <p class="alert alert-error">{users.error}</p>}
          <div class="table-scroll tall">
            <table class="rows">
              <thead>
                <tr>
                  <th scope="col" class="num">
                    id
                  </th>
                  <th scope="col">email</th>
                </tr>
              </thead>
              <tbody>
                {shown.slice(0, MAX_ROWS).map((u) => (
                  <tr key={u.id} class={u.id === props.selected ? 'selected' : ''}>
                    <td class="num">{u.id}</td>
                    <td>
                      <a
                        href={`#/users/${u.id}`}
                        aria-current={u.id === props.selected ? 'true' : undefined}
                        class="row-link"
                      >
                        {u.email ?? <span class="muted">(no email)</span>}
                      </a>
                    </td>
                  </tr>
                ))}
                {shown.length > MAX_ROWS && (
                  <tr>
                    <td colSpan={2} class="muted">
                      {MAX_ROWS} of {shown.length} shown, newest first: find by id or email for the others.
                    </td>
                  </tr>
                )}
                {users.value !== undefined && shown.length === 0 && (
                  <tr>
                    <td colSpan={2} class="muted">
                      No user matches.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </div>
        </Panel>
      </div>
      <div class="stack">
        {props.selected === null ? (
          <Panel title="User">
            <p class="muted">Select a user to see their balances and API keys, and to move funds.</p>
          </Panel>
        ) : selectedUser === undefined ? (
          <Panel title={`User ${props.selected}`}>
            <p class="muted">{users.loading ? 'Loading…' : 'No such user.'}</p>
          </Panel>
        ) : (
          <UserDetail key={selectedUser.id} client={client} user={selectedUser} assets={props.assets} />
        )}
      </div>
    </div>
  );
}

function NewUser(props: { readonly client: AdminClient; readonly onCreated: (user: User) => Promise<void> }) {
  const [email, setEmail] = useState('');
  const [error, setError] = useState<FormError | null>(null);
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<User | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    setCreated(null);
    try {
      const trimmed = email.trim();
      const { body } = await props.client.send<User>(
        'POST',
        '/users',
        trimmed === '' ? {} : { email: trimmed },
      );
      setEmail('');
      setCreated(body);
      await props.onCreated(body);
    } catch (caught) {
      setError(formError(caught, ['email']));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Panel title="New user">
      <form class="inline-form" onSubmit={submit} noValidate>
        <Field label="Email (optional)" name="email" error={error}>
          {(id, invalid, describedBy) => (
            <input
              id={id}
              type="email"
              autoComplete="off"
              value={email}
              aria-invalid={invalid}
              aria-describedby={describedBy}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" class="primary" disabled={busy}>
          Create user
        </button>
      </form>
      <FormAlert error={error} />
      {created !== null && (
        <p class="alert alert-ok" role="status">
          Created user {created.id}
          {created.email === null ? '' : ` (${created.email})`}.
        </p>
      )}
    </Panel>
  );
}
