pub mod helpdesk;
