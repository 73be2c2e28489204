CREATE TABLE `portal_codes` (
	`code_hash` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`tenant_created_at` integer NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `portal_codes_expires_idx` ON `portal_codes` (`expires_at`);