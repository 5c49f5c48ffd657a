// Every workflow kind and its definition; the record type makes a kind without a definition a type error. A kind
// is named by the operation that starts it; regenerateProduct, started by createProduct and updateProduct, by its verb.
import type { WorkflowDeadlines } from '../config.ts';
import type { WorkflowKind } from '../db/schema.ts';
import { clusterCreate } from './cluster.ts';
import { deprovision } from './deprovision.ts';
import type { WorkflowDefinition } from './engine.ts';
import { installWorkflow } from './install.ts';
import { provisionMachine } from './provision.ts';
import { regenerationWorkflow } from './regeneration.ts';
import { resumeMachine, suspendMachine } from './suspension.ts';
import { uninstallWorkflow } from './uninstall.ts';

export const workflowDefinitions = (deadlines: WorkflowDeadlines): Record<WorkflowKind, WorkflowDefinition> => ({
  createCluster: clusterCreate(deadlines),
  requestMachine: provisionMachine(deadlines),
  deleteMachine: deprovision,
  createInstall: installWorkflow(deadlines.installSyncSeconds),
  // The same steps: placed already, they re-render the releases (a rollback, its revision's) and wait for them.
  updateInstall: installWorkflow(deadlines.installSyncSeconds),
  rollbackInstall: installWorkflow(deadlines.installSyncSeconds),
  deleteInstall: uninstallWorkflow(deadlines.installSyncSeconds),
  regenerateProduct: regenerationWorkflow(deadlines),
  suspendMachine,
  resumeSuspension: resumeMachine(deadlines),
});
