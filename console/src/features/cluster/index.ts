// The cluster feature's public surface: the app shell imports only from here.
export { ClusterPage } from './components/ClusterPage';
