// The provider's server types the platform offers, smallest first; a compute config's machine_type_filter
// chooses among them. (The ComputeProvider reports offerings once the workers use it.)
export interface ServerType {
  name: string;
  cpu: number;
  memory_bytes: number;
}

const GiB = 1024 ** 3;
const type = (name: string, cpu: number, memoryGiB: number): ServerType => ({ name, cpu, memory_bytes: memoryGiB * GiB });

export const SERVER_TYPES: readonly ServerType[] = [
  type('cpx11', 2, 2),
  type('cx22', 2, 4),
  type('cax11', 2, 4),
  type('cpx21', 3, 4),
  type('ccx13', 2, 8),
  type('cx32', 4, 8),
  type('cax21', 4, 8),
  type('cpx31', 4, 8),
  type('ccx23', 4, 16),
  type('cx42', 8, 16),
  type('cax31', 8, 16),
  type('cpx41', 8, 16),
  type('ccx33', 8, 32),
  type('cx52', 16, 32),
  type('cax41', 16, 32),
  type('cpx51', 16, 32),
];

/** `cx2*` → /^cx2.*$/: a machine type filter is a glob over server type names. */
export function matchesFilter(filter: string, name: string): boolean {
  const pattern = filter
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replaceAll('*', '.*')
    .replaceAll('?', '.');
  return new RegExp(`^${pattern}$`).test(name);
}
