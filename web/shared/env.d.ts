// Vite imports a stylesheet for its side effect (it becomes a <link> in the built page).
declare module '*.css';
