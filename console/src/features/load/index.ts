// The load feature's public surface: the app shell imports only from here.
export { LoadPage } from './components/LoadPage';
