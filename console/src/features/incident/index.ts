// The incident feature's public surface: the app shell imports only from here.
export { IncidentPage } from './components/IncidentPage';
