// Every workflow kind and its definition; the record type makes a kind without a definition a type error. A kind
// is named by the operation that starts it; regenerateProduct, started by createProduct and updateProduct, by its verb.
import type { WorkflowDeadlines } from '../config.ts';
import type { WorkflowKind } from '../db/schema.ts';
import { clusterCreate } from './cluster.ts';
import { deprovision } from './deprovision.ts';
import type { WorkflowDefinition } from './engine.ts';
import { createInstall } from './install.ts';
import { provision } from './provision.ts';
import { regenerateProduct } from './regeneration.ts';
import { resumeSuspension, suspendMachine } from './suspension.ts';
import { deleteInstall } from './uninstall.ts';

export const workflowDefinitions = (deadlines: WorkflowDeadlines): Record<WorkflowKind, WorkflowDefinition> => ({
  createCluster: clusterCreate(deadlines),
  requestMachine: provision,
  deleteMachine: deprovision,
  createInstall,
  // The same steps: placed already, they re-render the releases (a rollback, its revision's) and wait for them.
  updateInstall: createInstall,
  rollbackInstall: createInstall,
  deleteInstall,
  regenerateProduct,
  suspendMachine,
  resumeSuspension,
});
