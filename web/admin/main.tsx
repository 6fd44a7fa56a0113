// The operator console (`/admin`): see app.tsx. Styles are files (the CSP allows no inline style).
import { render } from 'preact';
import '../shared/base.css';
import './admin.css';
import { App } from './app.js';

render(<App />, document.getElementById('app')!);
