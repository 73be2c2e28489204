CREATE TABLE `signing_keys` (
	`kid` text PRIMARY KEY NOT NULL,
	`public_key` text NOT NULL,
	`secret` text NOT NULL,
	`active` integer,
	`created_at` integer NOT NULL,
	`retires_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `signing_keys_active_idx` ON `signing_keys` (`active`);