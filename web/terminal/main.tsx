import { render } from 'preact';
import '../shared/base.css';
import './terminal.css';
import { App } from './app.js';

render(<App />, document.getElementById('app')!);
