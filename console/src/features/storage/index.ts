// The storage feature's public surface: the app shell imports only from here.
export { StoragePage } from './components/StoragePage';
