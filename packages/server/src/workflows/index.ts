// Every workflow kind and its definition; the record type makes a kind without a definition a type error.
import type { WorkflowKind } from '../db/schema.ts';
import { clusterCreate } from './cluster.ts';
import type { WorkflowDefinition } from './engine.ts';
import { installWorkflow } from './install.ts';
import { deprovision } from './deprovision.ts';
import { provision } from './provision.ts';
import { regeneration } from './regeneration.ts';
import { resume, suspend } from './suspension.ts';

export const workflowDefinitions = (): Record<WorkflowKind, WorkflowDefinition> => ({
  cluster_create: clusterCreate,
  provision,
  deprovision,
  install: installWorkflow,
  regeneration,
  suspend,
  resume,
});
