// The tenant clusters' network, in one place: Kamaji's TenantControlPlane `spec.networkProfile` and the CNI the
// platform installs in every cluster must agree on these, or pods get addresses the control plane does not route.
// The values are kubeadm's defaults (podSubnet is the one Flannel's and Cilium's quick starts expect).

/** Pod addresses (the CNI's pool, the control plane's `--cluster-cidr`). */
export const POD_CIDR = '10.244.0.0/16';
/** Service addresses (the API server's `--service-cluster-ip-range`). */
export const SERVICE_CIDR = '10.96.0.0/12';
/** The cluster DNS Service's address: the tenth of SERVICE_CIDR, as kubeadm picks it. */
export const DNS_SERVICE_IP = '10.96.0.10';
