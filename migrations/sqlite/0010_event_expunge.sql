CREATE TABLE `expunge_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`status` text NOT NULL,
	`time_from` integer NOT NULL,
	`time_to` integer NOT NULL,
	`topic` text,
	`expunged` integer NOT NULL,
	`cursor_time` integer,
	`cursor_event` text,
	`lease_owner` text,
	`lease_until` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE INDEX `expunge_jobs_open_idx` ON `expunge_jobs` (`created_at`) WHERE status <> 'done';--> statement-breakpoint
ALTER TABLE `events` ADD `expunged_at` integer;