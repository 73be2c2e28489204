CREATE TABLE `replay_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`destination_id` text NOT NULL,
	`status` text NOT NULL,
	`since` integer NOT NULL,
	`until` integer NOT NULL,
	`select_status` text NOT NULL,
	`topics` text,
	`matched` integer NOT NULL,
	`done` integer NOT NULL,
	`failed` integer NOT NULL,
	`cursor_time` integer,
	`cursor_event` text,
	`batch_time` integer,
	`batch_event` text,
	`batch_started_at` integer,
	`lease_owner` text,
	`lease_until` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE INDEX `replay_jobs_running_idx` ON `replay_jobs` (`created_at`) WHERE status = 'running';--> statement-breakpoint
CREATE INDEX `replay_jobs_destination_idx` ON `replay_jobs` (`tenant_id`,`destination_id`,`created_at`);--> statement-breakpoint
ALTER TABLE `deliveries` ADD `replay_job` text;--> statement-breakpoint
CREATE INDEX `deliveries_replay_idx` ON `deliveries` (`replay_job`) WHERE replay_job is not null;