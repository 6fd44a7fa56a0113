// Placeholder of the operator console (`/admin`): the console itself is built on the `webadmin`
// branch. It only proves the entry builds and is served.
import { render } from 'preact';
import '../shared/base.css';

render(
  <main>
    <h1>OpenSpot operator console</h1>
    <p class="muted">Not built yet.</p>
  </main>,
  document.getElementById('app')!,
);
