// Every workflow kind and its definition; the record type makes a kind without a definition a type error. A kind
// is named by the operation that starts it; regenerateProduct, started by createProduct and updateProduct, by its verb.
import type { WorkflowDeadlines } from '../config.ts';
import type { WorkflowKind } from '../db/schema.ts';
import type { WorkflowDefinition } from '../engine/engine.ts';
import { createClusterWorkflow } from './create-cluster.ts';
import { createInstallWorkflow } from './create-install.ts';
import { deleteInstallWorkflow } from './delete-install.ts';
import { deleteMachineWorkflow } from './delete-machine.ts';
import { regenerateProductWorkflow } from './regenerate-product.ts';
import { requestMachineWorkflow } from './request-machine.ts';
import { resumeSuspensionWorkflow } from './resume-suspension.ts';
import { suspendMachineWorkflow } from './suspend-machine.ts';

export const workflowDefinitions = (deadlines: WorkflowDeadlines): Record<WorkflowKind, WorkflowDefinition> => ({
  createCluster: createClusterWorkflow(deadlines),
  requestMachine: requestMachineWorkflow(deadlines),
  deleteMachine: deleteMachineWorkflow,
  createInstall: createInstallWorkflow(deadlines.installSyncSeconds),
  // The same steps: placed already, they re-render the releases (a rollback, its revision's) and wait for them.
  updateInstall: createInstallWorkflow(deadlines.installSyncSeconds),
  rollbackInstall: createInstallWorkflow(deadlines.installSyncSeconds),
  deleteInstall: deleteInstallWorkflow(deadlines.installSyncSeconds),
  regenerateProduct: regenerateProductWorkflow(deadlines),
  suspendMachine: suspendMachineWorkflow,
  resumeSuspension: resumeSuspensionWorkflow(deadlines),
});
