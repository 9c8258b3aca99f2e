// The elections feature's public surface: the app shell imports only from here.
export { ElectionsPage } from './components/ElectionsPage';
