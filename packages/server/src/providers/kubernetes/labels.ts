/** Labels and annotations the platform puts on what it creates. */
export const LABEL = { cluster: 'platform-api/cluster', install: 'platform-api/install', template: 'platform-api/template', revision: 'platform-api/revision' };
