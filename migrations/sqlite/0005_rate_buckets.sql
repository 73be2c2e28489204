CREATE TABLE `rate_buckets` (
	`tenant_id` text NOT NULL,
	`destination_id` text NOT NULL,
	`tokens` real NOT NULL,
	`refilled_at` integer NOT NULL,
	PRIMARY KEY(`tenant_id`, `destination_id`)
);
