// Every workflow kind and its definition; the record type makes a kind without a definition a type error. A kind
// is named by the operation that starts it; regenerateProduct, started by createProduct and updateProduct, by its verb.
import type { Config } from '../config.ts';
import type { WorkflowKind } from '../db/schema.ts';
import { clusterCreate } from './cluster.ts';
import { deprovision } from './deprovision.ts';
import type { WorkflowDefinition } from './engine.ts';
import { installWorkflow } from './install.ts';
import { provisionMachine } from './provision.ts';
import { regenerateProduct } from './regeneration.ts';
import { resumeMachine, suspendMachine } from './suspension.ts';
import { uninstallWorkflow } from './uninstall.ts';

/** The settings the kinds' deadlines read. */
export type WorkflowSettings = Pick<Config, 'machineBootTimeoutSeconds' | 'installSyncTimeoutSeconds'>;

export const workflowDefinitions = (settings: WorkflowSettings): Record<WorkflowKind, WorkflowDefinition> => ({
  createCluster: clusterCreate,
  requestMachine: provisionMachine(settings),
  deleteMachine: deprovision,
  createInstall: installWorkflow(settings.installSyncTimeoutSeconds),
  // The same steps: placed already, they re-render the releases (a rollback, its revision's) and wait for them.
  updateInstall: installWorkflow(settings.installSyncTimeoutSeconds),
  rollbackInstall: installWorkflow(settings.installSyncTimeoutSeconds),
  deleteInstall: uninstallWorkflow(settings.installSyncTimeoutSeconds),
  regenerateProduct,
  suspendMachine,
  resumeSuspension: resumeMachine(settings),
});
