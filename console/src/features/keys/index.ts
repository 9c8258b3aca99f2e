// The keys feature's public surface: the app shell imports only from here.
export { KeysPage } from './components/KeysPage';
