export { createOutflow, Outflow, type OutflowEvents, type DeliveryOutcome, type AlertPayload } from './engine.js'
export type { OutflowOptions, Logger } from './options.js'
export { OutflowError, errorStatus, type OutflowErrorCode, type ErrorData } from './errors.js'
export type { Storage } from './storage/storage.js'
export type { Tenant } from './model/tenant.js'
export type { Destination } from './model/destination.js'
export type { Event, DeliveryAttempt, PublishInput, PublishResult } from './model/event.js'
export type { Page, Pagination } from './model/pagination.js'
export {
  destinationTypes,
  type DestinationTypeName,
  type DestinationTypeSchema,
  type DestinationTypeDefinition,
  type FieldSpec,
  type AttemptResult,
  type DeliveryMessage,
  type Publisher,
} from './destinations/types.js'
export { verifyTenantToken } from './tokens.js'
