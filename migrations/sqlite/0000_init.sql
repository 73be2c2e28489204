CREATE TABLE `attempts` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`event_id` text NOT NULL,
	`destination_id` text NOT NULL,
	`delivery_id` text NOT NULL,
	`attempt_number` integer NOT NULL,
	`manual` integer NOT NULL,
	`status` text NOT NULL,
	`response_status_code` integer,
	`response_body` text,
	`response_headers` text,
	`error` text,
	`error_kind` text,
	`duration_ms` integer,
	`delivered_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `attempts_event_idx` ON `attempts` (`tenant_id`,`event_id`,`delivered_at`);--> statement-breakpoint
CREATE TABLE `deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`event_id` text NOT NULL,
	`destination_id` text NOT NULL,
	`topic` text NOT NULL,
	`event_time` integer NOT NULL,
	`status` text NOT NULL,
	`attempt_count` integer NOT NULL,
	`manual` integer NOT NULL,
	`next_attempt_at` integer,
	`lease_owner` text,
	`lease_until` integer,
	`last_attempt_at` integer,
	`successful_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `deliveries_pair_idx` ON `deliveries` (`tenant_id`,`event_id`,`destination_id`);--> statement-breakpoint
CREATE INDEX `deliveries_due_idx` ON `deliveries` (`next_attempt_at`) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX `deliveries_tenant_time_idx` ON `deliveries` (`tenant_id`,`event_time`,`event_id`,`destination_id`) WHERE attempt_count > 0;--> statement-breakpoint
CREATE INDEX `deliveries_destination_time_idx` ON `deliveries` (`tenant_id`,`destination_id`,`event_time`,`event_id`) WHERE attempt_count > 0;--> statement-breakpoint
CREATE INDEX `deliveries_time_idx` ON `deliveries` (`event_time`,`event_id`,`destination_id`) WHERE attempt_count > 0;--> statement-breakpoint
CREATE TABLE `destinations` (
	`tenant_id` text NOT NULL,
	`id` text NOT NULL,
	`type` text NOT NULL,
	`topics` text NOT NULL,
	`filter` text,
	`config` text NOT NULL,
	`credentials` text NOT NULL,
	`delivery_metadata` text,
	`metadata` text,
	`disabled_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`consecutive_failures` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`tenant_id`, `id`)
);
--> statement-breakpoint
CREATE INDEX `destinations_tenant_created_idx` ON `destinations` (`tenant_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `events` (
	`tenant_id` text NOT NULL,
	`id` text NOT NULL,
	`topic` text NOT NULL,
	`time` integer NOT NULL,
	`data` text NOT NULL,
	`metadata` text NOT NULL,
	`eligible_for_retry` integer NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `id`)
);
--> statement-breakpoint
CREATE TABLE `tenants` (
	`id` text PRIMARY KEY NOT NULL,
	`metadata` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `tenants_created_idx` ON `tenants` (`created_at`,`id`);