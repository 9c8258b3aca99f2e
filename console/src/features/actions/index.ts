// The actions feature's public surface: the app shell imports only from here.
export { ActionsPage } from './components/ActionsPage';
